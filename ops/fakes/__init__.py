"""Test doubles: local fake LLM servers (Anthropic Messages API, chat completions) and judge-request factories."""

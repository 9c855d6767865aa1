"""Which of our text models answers a score's LLM nodes: Plexus ``model_provider`` / ``model_name`` → a spec.

Plexus names LangChain chat classes; each maps to one of the project's text-model families (the spec syntax of
``engine.llm.factory.make_text_model``). A provider not in the table is a validation error, never a guess.
"""

from __future__ import annotations

#: Plexus ``model_provider`` -> our text-model family.
PROVIDERS: dict[str, str] = {
    "ChatOpenAI": "openai-compatible",
    "AzureChatOpenAI": "openai-compatible",
    "ChatOllama": "openai-compatible",
    "ChatAnthropic": "anthropic",
}
DEFAULT_PROVIDER = "ChatOpenAI"


def known_provider(provider: str | None) -> bool:
    return provider is None or provider in PROVIDERS


def unknown_provider_message(provider: str) -> str:
    return f"unknown model provider '{provider}'; known: {', '.join(PROVIDERS)}"


def model_spec(provider: str | None, model_name: str | None) -> str:
    """``ChatOpenAI`` + ``gpt-4o-mini`` -> ``openai-compatible:gpt-4o-mini`` (no model name: the family only)."""
    family = PROVIDERS.get(provider or DEFAULT_PROVIDER)
    if family is None:
        raise ValueError(unknown_provider_message(provider or ""))
    return f"{family}:{model_name}" if model_name else family

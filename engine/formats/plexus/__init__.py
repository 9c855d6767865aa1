"""Plexus scorecards (seed 003): graph scores of LLM and code nodes, dependencies, evaluation against labels.

- :mod:`.model` — the pydantic models of a score / scorecard file (also the JSON Schema);
- :mod:`.loader` — reading and validating files (``FILE:LINE: field.path: message``), linter rules;
- :mod:`.parsing` — the classifier's answer parsing; :mod:`.templates` — sandboxed Jinja2 prompts;
- :mod:`.nodes` / :mod:`.code` — node behaviour, user code out of process; :mod:`.graph` — one score's graph;
- :mod:`.scorecard` — dependencies and concurrency; :mod:`.evaluate` / :mod:`.metrics` — agreement with labels.
"""

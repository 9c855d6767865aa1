"""Build a text model from a spec string (``--actor`` for population generation and extraction).

Specs: ``anthropic[:MODEL]``, ``openai-compatible[:MODEL]`` (``DRIFT_OPENAI_BASE_URL``, optional
``OPENAI_API_KEY``), ``scripted[:RULES.yaml]``, or empty for :meth:`Settings.effective_actor` (anthropic when
``ANTHROPIC_API_KEY`` is set, else scripted). Provider models share the judges' call policy with the actor
deadline and concurrency (``DRIFT_ACTOR_DEADLINE_S``, ``DRIFT_ACTOR_CONCURRENCY``). What ``scripted`` means
depends on the job, so the caller passes its own scripted model; ``scripted:RULES.yaml`` is a
:class:`~engine.llm.scripted.ScriptedTextModel` rules file (see :func:`~engine.llm.scripted.scripted_rules_model`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from engine.errors import ConfigurationError
from engine.judges.llm import CallPolicy
from engine.llm.base import TextModel
from engine.llm.openai_compat import OpenAICompatibleTextModel
from engine.llm.scripted import scripted_rules_model
from engine.settings import Settings

ACTOR_CHOICES = ("anthropic[:MODEL]", "openai-compatible[:MODEL]", "scripted[:RULES.yaml]")


def split_spec(spec: str, settings: Settings, flag: str = "--actor") -> tuple[str, str]:
    kind, _, argument = (spec.strip() or settings.effective_actor()).partition(":")
    if kind not in {"anthropic", "openai-compatible", "scripted"}:
        raise ConfigurationError(f"unknown {flag.lstrip('-')} {spec!r}; choose one of {', '.join(ACTOR_CHOICES)}")
    return kind, argument


def make_text_model(
    spec: str,
    settings: Settings,
    *,
    scripted: Callable[[], TextModel] | None = None,
    environ: Mapping[str, str] | None = None,
    flag: str = "--actor",
) -> TextModel:
    """The text model named by ``spec``; plain ``scripted`` is ``scripted()`` (the caller's deterministic model).
    ``flag`` is the option that chose it, named in the errors (``--actor``, Plexus' ``--model``)."""
    kind, argument = split_spec(spec, settings, flag)
    policy = CallPolicy(deadline_s=settings.actor_deadline_s, concurrency=settings.actor_concurrency)
    env = os.environ if environ is None else environ
    if kind == "anthropic":
        if not settings.anthropic_api_key:
            offline = "scripted" if flag == "--actor" else "scripted:RULES.yaml"
            raise ConfigurationError(f"ANTHROPIC_API_KEY is not set: export it, or choose {flag} {offline}")
        key = settings.anthropic_api_key.get_secret_value()
        from engine.llm.anthropic import AnthropicTextModel  # the SDK: seconds of imports, for this actor only

        return AnthropicTextModel(api_key=key, model=argument or settings.anthropic_model,
                                  base_url=settings.anthropic_base_url, policy=policy)  # fmt: skip
    if kind == "openai-compatible":
        return OpenAICompatibleTextModel(base_url=settings.openai_base_url, model=argument or settings.openai_model,
                                         api_key=env.get("OPENAI_API_KEY") or None, policy=policy)  # fmt: skip
    if argument:
        return scripted_rules_model(Path(argument).expanduser())
    if scripted is None:
        raise ConfigurationError("this command has no built-in scripted model: use scripted:RULES.yaml")
    return scripted()

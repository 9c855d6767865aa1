"""Build a judge from a spec string (``--judge`` / ``DRIFT_JUDGE``).

Specs: ``scripted:FILE``, ``replay:FILE``, ``anthropic`` (optionally ``anthropic:MODEL``),
``openai-compatible`` (optionally ``openai-compatible:MODEL``), ``offline``, or empty for
:meth:`engine.settings.Settings.effective_judge` (anthropic when a key is set, else offline).
``record`` wraps the judge so every answered request is appended to that cassette.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from engine.errors import ConfigurationError
from engine.judges.base import Judge
from engine.judges.llm import CallPolicy
from engine.judges.offline import OfflineJudge
from engine.judges.replay import RecordingJudge, ReplayJudge
from engine.judges.scripted import ScriptedJudge
from engine.retry import RetryCounter, no_count
from engine.settings import Settings

JUDGE_CHOICES = ("anthropic", "openai-compatible", "offline", "scripted:FILE", "replay:FILE")


def make_judge(
    spec: str,
    settings: Settings,
    *,
    record: Path | None = None,
    environ: Mapping[str, str] | None = None,
    own_limits: bool = True,
    on_retry: RetryCounter = no_count,
) -> Judge:
    """The judge named by ``spec``; ``environ`` (default ``os.environ``) supplies ``OPENAI_API_KEY``.

    An LLM judge caps its calls in flight at ``DRIFT_JUDGE_CONCURRENCY`` and bounds each by
    ``DRIFT_JUDGE_DEADLINE_S``; ``own_limits=False`` leaves both to the caller (a worker's
    :class:`engine.judges.budget.JudgeBudget`), so each is applied once per call path. An LLM judge tells
    ``on_retry`` of every retry (a worker counts them in ``drift_retries_total``)."""
    spec = spec.strip() or settings.effective_judge()
    kind, _, argument = spec.partition(":")
    judge = _build(kind, argument, settings, os.environ if environ is None else environ, own_limits, on_retry)
    return RecordingJudge(judge, record) if record is not None else judge


def _build(
    kind: str, argument: str, settings: Settings, environ: Mapping[str, str], own_limits: bool, on_retry: RetryCounter
) -> Judge:
    policy = (
        CallPolicy(deadline_s=settings.judge_deadline_s, concurrency=settings.judge_concurrency, on_retry=on_retry)
        if own_limits
        else CallPolicy(deadline_s=None, concurrency=None, on_retry=on_retry)
    )
    if kind in {"scripted", "replay"}:
        if not argument:
            raise ConfigurationError(f"judge '{kind}' needs a file: use '{kind}:PATH'")
        path = Path(argument).expanduser()
        return ScriptedJudge.from_file(path) if kind == "scripted" else ReplayJudge(path)
    if kind == "anthropic":
        from engine.judges.anthropic import AnthropicJudge  # the SDK's import is ~1 s of a worker's start: only here

        if not settings.anthropic_api_key:
            raise ConfigurationError(
                "ANTHROPIC_API_KEY is not set: export it to use the anthropic judge, or choose another judge "
                "(offline, scripted:FILE, replay:FILE, openai-compatible)"
            )
        return AnthropicJudge(
            api_key=settings.anthropic_api_key.get_secret_value(),
            model=argument or settings.anthropic_model,
            base_url=settings.anthropic_base_url,
            policy=policy,
        )
    if kind == "openai-compatible":
        from engine.judges.openai_compat import OpenAICompatibleJudge  # httpx (and its CLI's rich): only here

        return OpenAICompatibleJudge(
            base_url=settings.openai_base_url,
            model=argument or settings.openai_model,
            api_key=environ.get("OPENAI_API_KEY") or None,
            policy=policy,
        )
    if kind == "offline" and not argument:
        return OfflineJudge()
    spec = f"{kind}:{argument}" if argument else kind
    raise ConfigurationError(f"unknown judge {spec!r}; choose one of {', '.join(JUDGE_CHOICES)}")

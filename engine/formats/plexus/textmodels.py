"""Which text model answers a scorecard's LLM nodes.

``--model SPEC`` answers every node: ``scripted:RULES.yaml`` (a :class:`~engine.llm.scripted.ScriptedTextModel`
from a rules file, :func:`~engine.llm.scripted.scripted_rules_model`, labelled ``scripted:<file>``; a relative
path is read from ``cwd``) or any spec of ``engine.llm.factory.make_text_model`` (``anthropic[:MODEL]``,
``openai-compatible[:MODEL]``). Without it each score uses its own ``model_provider`` / ``model_name`` (see
:mod:`.providers`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError
from engine.formats.plexus.code import has_code
from engine.formats.plexus.model import Scorecard
from engine.formats.plexus.nodes import NodeContext
from engine.formats.plexus.providers import model_spec
from engine.formats.usercode import STRICT, CodeSandbox
from engine.llm.base import TextModel
from engine.llm.scripted import scripted_rules_model


def text_model(spec: str, settings: Any, *, cwd: Path) -> TextModel:
    if spec.startswith("scripted:"):
        target = Path(spec.removeprefix("scripted:"))
        return scripted_rules_model(target if target.is_absolute() else cwd / target)
    from engine.llm.factory import make_text_model

    return make_text_model(spec, settings, flag="--model")


def node_context(
    card: Scorecard,
    spec: str | None,
    settings: Any,
    *,
    cwd: Path,
    source: Path | None = None,
    sandbox: CodeSandbox = STRICT,
) -> NodeContext:
    """One model for every score (``spec``), else each score's own provider and model; code nodes run under
    ``sandbox`` and see the folder of ``source`` (the scorecard file). A scorecard with code nodes is refused
    here, in one line, when the sandbox cannot be had and the run did not allow unsandboxed code."""
    if has_code(card.all_scores()):
        sandbox.require(f"{source or 'this scorecard'}")
    else:
        sandbox = STRICT  # no code runs: nothing to mark as unsandboxed
    folder = source.resolve().parent if source is not None else None
    return replace(_models(card, spec, settings, cwd=cwd), sandbox=sandbox, code_folder=folder)


def _models(card: Scorecard, spec: str | None, settings: Any, *, cwd: Path) -> NodeContext:
    if spec is not None:
        return NodeContext(text_model(spec, settings, cwd=cwd))
    built: dict[str, TextModel] = {}
    per_score: dict[str, TextModel] = {}
    for score in card.all_scores():
        wanted = model_spec(score.model_provider, score.model_name)
        if wanted not in built:
            built[wanted] = text_model(wanted, settings, cwd=cwd)
        per_score[score.name] = built[wanted]
    if not per_score:
        raise ConfigurationError("the scorecard has no scores")
    return NodeContext(next(iter(per_score.values())), score_models=per_score)

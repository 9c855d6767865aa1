"""Which text model answers a scorecard's LLM nodes.

``--model SPEC`` answers every node: ``scripted:RULES.yaml`` (a :class:`~engine.llm.scripted.ScriptedTextModel`
from a rules file, labelled ``scripted:<file>``) or any spec of ``engine.llm.factory.make_text_model``
(``anthropic[:MODEL]``, ``openai-compatible[:MODEL]``). Without it each score uses its own
``model_provider`` / ``model_name`` (see :mod:`.providers`).

A rules file::

    rules:
      - pattern: "regular expression over the prompt"
        reply: "the answer"            # or replies: [first, second, …]
    default: "answer when nothing matches"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.errors import ConfigurationError, PropositionFileError
from engine.formats.plexus.model import Scorecard, Text, Texts
from engine.formats.plexus.nodes import NodeContext
from engine.formats.plexus.providers import model_spec
from engine.llm.base import TextModel
from engine.llm.scripted import ScriptedRule, ScriptedTextModel
from engine.propositions.issues import validate_document
from engine.propositions.yamlsource import read_yaml


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    reply: Text | None = None
    replies: Texts = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_answer(self) -> _Rule:
        if (self.reply is None) == (not self.replies):
            raise ValueError("give exactly one of 'reply' and 'replies'")
        return self


class _Rules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[_Rule] = Field(default_factory=list)
    default: Text = ""


def scripted_model(path: Path) -> ScriptedTextModel:
    if not path.is_file():
        raise ConfigurationError(f"no such rules file: {path}")
    rules, issues = validate_document(read_yaml(path), _Rules, "rules file")
    if rules is None:
        raise PropositionFileError(issues)
    built = [ScriptedRule(r.pattern, tuple(r.replies or [r.reply or ""])) for r in rules.rules]
    return ScriptedTextModel(built, default=rules.default, label=path.name)


def text_model(spec: str, settings: Any, *, cwd: Path) -> TextModel:
    if spec.startswith("scripted:"):
        target = Path(spec.removeprefix("scripted:"))
        return scripted_model(target if target.is_absolute() else cwd / target)
    from engine.llm.factory import make_text_model

    return make_text_model(spec, settings)


def node_context(card: Scorecard, spec: str | None, settings: Any, *, cwd: Path) -> NodeContext:
    """One model for every score (``spec``), else each score's own provider and model."""
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

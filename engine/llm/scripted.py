"""A deterministic :class:`~engine.llm.base.TextModel` for tests, demos and CI: regex rules → replies.

Rules are tried in order against the text of the request (system text and every turn, joined by newlines);
the first whose ``pattern`` matches (``re.search``, case-insensitive) answers with its ``reply``. A reply may
use ``{0}``, ``{1}``… for the pattern's groups. With no match the ``default`` reply is used. ``replies`` (a
list instead of ``reply``) answers with each in turn, then repeats the last — handy for "wrong format first,
right format after a correction" tests. Its name is always ``scripted:<label>``.

:func:`scripted_rules_model` reads such rules from a YAML file, the one format of ``scripted:RULES.yaml``
wherever a text model is chosen (``--actor``, Plexus's ``--model``)::

    rules:
      - pattern: "regular expression over the prompt"
        reply: "the answer"            # or replies: [first, second, …]
    default: "answer when nothing matches"

A file that does not fit is refused whole, one ``FILE:LINE: field.path: message`` per problem.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.errors import ConfigurationError, PropositionFileError
from engine.llm.base import Completion, CompletionRequest
from engine.models import TokenUsage
from engine.propositions.issues import validate_document
from engine.propositions.yamlsource import Text, Texts, read_yaml


@dataclass
class ScriptedRule:
    pattern: str
    replies: tuple[str, ...]
    compiled: re.Pattern[str] = field(init=False, repr=False)
    used: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not self.replies:
            raise ConfigurationError(f"scripted rule {self.pattern!r} has no reply")
        try:
            self.compiled = re.compile(self.pattern, re.IGNORECASE | re.DOTALL)
        except re.error as exc:
            raise ConfigurationError(f"scripted rule {self.pattern!r}: bad regular expression: {exc}") from exc

    def answer(self, match: re.Match[str]) -> str:
        reply = self.replies[min(self.used, len(self.replies) - 1)]
        self.used += 1
        return reply.format(*match.groups())


class ScriptedTextModel:
    """Answers by rules; counts its calls so tests can assert how many a path made."""

    def __init__(self, rules: Sequence[ScriptedRule] = (), *, default: str = "", label: str = "rules") -> None:
        self._rules = list(rules)
        self._default = default
        self._label = label
        self.requests: list[CompletionRequest] = []

    @classmethod
    def from_pairs(cls, pairs: Sequence[tuple[str, str | Sequence[str]]], *, default: str = "") -> ScriptedTextModel:
        rules = [ScriptedRule(p, (r,) if isinstance(r, str) else tuple(r)) for p, r in pairs]
        return cls(rules, default=default)

    @property
    def name(self) -> str:
        return f"scripted:{self._label}"

    async def complete(self, request: CompletionRequest) -> Completion:
        started = time.perf_counter()
        self.requests.append(request)
        text = "\n".join([request.system, *(m.content for m in request.messages)])
        reply = self._default
        for rule in self._rules:
            match = rule.compiled.search(text)
            if match is not None:
                reply = rule.answer(match)
                break
        usage = TokenUsage(input_tokens=len(text.split()), output_tokens=len(reply.split()))
        return Completion(reply, self.name, usage, (time.perf_counter() - started) * 1000)


class _RuleEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: str
    reply: Text | None = None
    replies: Texts = Field(default_factory=list)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return pattern

    @model_validator(mode="after")
    def _one_answer(self) -> _RuleEntry:
        if (self.reply is None) == (not self.replies):
            raise ValueError("give exactly one of 'reply' and 'replies'")
        return self


class _RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rules: list[_RuleEntry] = Field(default_factory=list)
    default: Text = ""


def scripted_rules_model(path: Path) -> ScriptedTextModel:
    """A :class:`ScriptedTextModel` from a rules file (``rules: [{pattern, reply | replies}]``, ``default``),
    labelled with the file's name; raises :class:`PropositionFileError` (``FILE:LINE`` lines) on a bad file."""
    if not path.is_file():
        raise ConfigurationError(f"no such rules file: {path}")
    rules, issues = validate_document(read_yaml(path), _RulesFile, "rules file")
    if rules is None:
        raise PropositionFileError(issues)
    built = [ScriptedRule(rule.pattern, tuple(rule.replies or [rule.reply or ""])) for rule in rules.rules]
    return ScriptedTextModel(built, default=rules.default, label=path.name)

"""A deterministic judge driven by a YAML rules file: CI, demos and tests without any model.

File format (first matching rule wins)::

    default: 9                  # score when no rule matches (required)
    default_check: true         # check answer when no rule matches (default true)
    default_count: 3            # enumerate count when no rule matches (default 0)
    usage: {input_tokens: 100, output_tokens: 20}   # token usage reported per call (default none: budgets)
    rules:
      - proposition: "michael-*"     # fnmatch pattern on the claim id (optional)
        agent: michael               # fnmatch pattern on request.agent_id (optional; "*.treatment.*")
        target: "*session*"          # fnmatch pattern on the target's name (optional)
        message_contains: "boring"   # case-insensitive substring of request.judged_text() (optional)
        value: 3                     # int 0-9: scores and enumerate counts; true/false: checks
        delay_s: 0                   # answer after this many seconds (optional)
        reasoning: "..."             # optional

A rule with an int ``value`` only applies to score and enumerate requests, one with a bool ``value`` only to
check requests. In a batch every claim is matched on its own; the call waits for the longest delay of the
matched rules. The file is read like every YAML file of the project (:func:`engine.propositions.yamlsource.
parse_yaml`: libyaml's safe parser, duplicate keys and oversized documents refused) and every problem is
reported as ``FILE:LINE: path: message`` (:class:`~engine.errors.PropositionFileError`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError, FileIssue, PropositionFileError
from engine.judges.base import CallLog, Claim, ClaimAnswer, JudgeMode, JudgeRequest, JudgeResult
from engine.judges.parsing import is_score
from engine.models import ZERO_USAGE, TokenUsage
from engine.propositions.yamlsource import FieldPath, parse_yaml

_TOP_KEYS = {"default", "default_check", "default_count", "rules", "usage"}
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_RULE_KEYS = {"proposition", "agent", "target", "message_contains", "value", "delay_s", "reasoning"}
_MATCHERS = ("proposition", "agent", "target", "message_contains")


#: The line of a field path in the rules file (0: rules from a dict, which have no lines).
LineOf = Callable[[FieldPath], int]


def _no_lines(path: FieldPath) -> int:
    return 0


@dataclass(frozen=True, slots=True)
class Rule:
    value: int | bool
    proposition: str | None = None
    agent: str | None = None
    target: str | None = None
    message_contains: str | None = None
    delay_s: float = 0.0
    reasoning: str | None = None
    line: int = 0

    def applies(self, mode: JudgeMode, claim: Claim, request: JudgeRequest) -> bool:
        if isinstance(self.value, bool) != (mode is JudgeMode.CHECK):
            return False
        if self.proposition is not None and not fnmatchcase(claim.id, self.proposition):
            return False
        if self.agent is not None and not fnmatchcase(request.agent_id or "", self.agent):
            return False
        if self.target is not None and not fnmatchcase(request.target_name, self.target):
            return False
        return self.message_contains is None or self.message_contains.lower() in request.judged_text().lower()


@dataclass(frozen=True, slots=True)
class Rules:
    default: int
    default_check: bool = True
    default_count: int = 0
    rules: tuple[Rule, ...] = field(default=())
    usage: TokenUsage = ZERO_USAGE  # reported per call (to test token budgets without a model)


class ScriptedJudge:
    """Answers from :class:`Rules`; ``log`` records every request for call-count assertions."""

    def __init__(self, rules: Rules, *, name: str = "scripted:inline") -> None:
        self._rules = rules
        self._name = name
        self.log = CallLog()

    @classmethod
    def from_file(cls, path: Path) -> ScriptedJudge:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigurationError(f"cannot read scripted judge rules {path}: {error.strerror}") from None
        return cls(parse_rules(text, str(path)), name=f"scripted:{path.stem}")

    @classmethod
    def from_rules(cls, data: Mapping[str, Any], *, name: str = "scripted:inline") -> ScriptedJudge:
        """Rules from a dict shaped like the YAML file (validated the same way)."""
        return cls(_validate(dict(data), "<rules>", _no_lines), name=name)

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"ScriptedJudge(name={self._name!r}, rules={len(self._rules.rules)})"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        started = time.perf_counter()
        self.log.record(request)
        matches = [(claim, self._match(request, claim)) for claim in request.claims]
        delay = max((rule.delay_s for _, rule in matches if rule is not None), default=0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        answers = tuple(self._answer(request, claim, rule) for claim, rule in matches)
        latency_ms = (time.perf_counter() - started) * 1000
        return JudgeResult(answers=answers, judge=self._name, latency_ms=latency_ms, usage=self._rules.usage)

    def _match(self, request: JudgeRequest, claim: Claim) -> Rule | None:
        return next((r for r in self._rules.rules if r.applies(request.mode, claim, request)), None)

    def _answer(self, request: JudgeRequest, claim: Claim, rule: Rule | None) -> ClaimAnswer:
        value: int | bool
        if rule is not None:
            value = rule.value
            reasoning = rule.reasoning or f"[scripted] rule at line {rule.line} matched"
        else:
            value = {
                JudgeMode.SCORE: self._rules.default,
                JudgeMode.CHECK: self._rules.default_check,
                JudgeMode.ENUMERATE: self._rules.default_count,
            }[request.mode]
            reasoning = "[scripted] no rule matched; default answer"
        items: tuple[str, ...] = ()
        if request.mode is JudgeMode.ENUMERATE:
            items = tuple(f"scripted item {i}" for i in range(1, int(value) + 1))
        first = value if request.double_check else None
        return ClaimAnswer(claim_id=claim.id, value=value, reasoning=reasoning, first_value=first, items=items)


def parse_rules(text: str, source: str) -> Rules:
    """Parse and validate a rules file; raises :class:`PropositionFileError` with FILE:LINE issues."""
    document = parse_yaml(text, source)
    if document.issues:
        raise PropositionFileError(list(document.issues))
    if not isinstance(document.data, dict):
        raise PropositionFileError([FileIssue(source, 1, "", "the file must hold a mapping with 'default'")])
    return _validate(document.data, source, document.line_of)


def _validate(data: dict[str, Any], source: str, line_of: LineOf) -> Rules:
    issues: list[FileIssue] = []

    def issue(key: str, message: str) -> None:
        issues.append(FileIssue(source, line_of((key,)), key, message))

    for key in sorted(set(data) - _TOP_KEYS):
        issue(str(key), f"unknown key; expected one of {', '.join(sorted(_TOP_KEYS))}")
    default = data.get("default")
    if "default" not in data:
        issue("default", "required: the score given when no rule matches")
    elif not is_score(default):
        issue("default", f"must be a whole number from 0 to 9, not {default!r}")
    default_check = data.get("default_check", True)
    if not isinstance(default_check, bool):
        issue("default_check", f"must be true or false, not {default_check!r}")
    default_count = data.get("default_count", 0)
    if isinstance(default_count, bool) or not isinstance(default_count, int) or default_count < 0:
        issue("default_count", f"must be a whole number >= 0, not {default_count!r}")
    rules = _validate_rules(data.get("rules", []), source, line_of, issues)
    usage = _usage(data.get("usage"), issue)
    if issues or not is_score(default):
        raise PropositionFileError(issues)
    return Rules(default=default, default_check=default_check, default_count=default_count, rules=rules, usage=usage)


def _usage(raw: Any, issue: Any) -> TokenUsage:
    """The per-call usage: a mapping of token kinds to whole numbers >= 0."""
    if raw is None:
        return ZERO_USAGE
    bad = not isinstance(raw, dict) or any(
        k not in _USAGE_KEYS or isinstance(v, bool) or not isinstance(v, int) or v < 0 for k, v in raw.items()
    )
    if bad:
        issue("usage", f"must map {', '.join(_USAGE_KEYS)} to whole numbers >= 0")
        return ZERO_USAGE
    return TokenUsage(**raw)


def _validate_rules(raw: Any, source: str, line_of: LineOf, issues: list[FileIssue]) -> tuple[Rule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        issues.append(FileIssue(source, line_of(("rules",)), "rules", "must be a list of rules"))
        return ()
    rules: list[Rule] = []
    for index, item in enumerate(raw):
        rule = _validate_rule(item, source, index, line_of, issues)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _validate_rule(item: Any, source: str, index: int, line_of: LineOf, issues: list[FileIssue]) -> Rule | None:
    path = f"rules[{index}]"
    if not isinstance(item, dict):
        issues.append(FileIssue(source, line_of(("rules", index)), path, "a rule must be a mapping"))
        return None
    before = len(issues)

    def issue(key: str, message: str) -> None:
        issues.append(FileIssue(source, line_of(("rules", index, key)), f"{path}.{key}", message))

    for key in sorted(set(item) - _RULE_KEYS):
        issue(str(key), f"unknown key; expected one of {', '.join(sorted(_RULE_KEYS))}")
    value = item.get("value")
    if "value" not in item:
        issue("value", "required: an int 0-9 (scores, counts) or true/false (checks)")
    elif not (isinstance(value, bool) or is_score(value)):
        issue("value", f"must be a whole number from 0 to 9 or true/false, not {value!r}")
    for key in (*_MATCHERS, "reasoning"):
        if key in item and not isinstance(item[key], str):
            issue(key, f"must be a string, not {item[key]!r}")
    delay = item.get("delay_s", 0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        issue("delay_s", f"must be a number of seconds >= 0, not {delay!r}")
    if len(issues) > before or not isinstance(value, int):
        return None
    return Rule(
        value=value,
        proposition=item.get("proposition"),
        agent=item.get("agent"),
        target=item.get("target"),
        message_contains=item.get("message_contains"),
        delay_s=float(delay),
        reasoning=item.get("reasoning"),
        line=line_of(("rules", index, "value")),
    )

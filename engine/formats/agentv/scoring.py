"""Deterministic scoring: verdicts, the weighted mean, tool trajectories, field accuracy and execution metrics."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from engine.formats.agentv.model import EvaluatorSpec, ExpectedTool
from engine.formats.targets import ToolCall

PASS_AT = 0.8
BORDERLINE_AT = 0.6


def verdict_of(score: float) -> str:
    """``pass`` at ≥ 0.8, ``borderline`` at ≥ 0.6, else ``fail``."""
    if score >= PASS_AT:
        return "pass"
    return "borderline" if score >= BORDERLINE_AT else "fail"


def clamp(score: float) -> float:
    return 0.0 if math.isnan(score) else min(1.0, max(0.0, score))


@dataclass(frozen=True, slots=True)
class EvaluatorResult:
    name: str
    type: str
    score: float
    weight: float = 1.0
    verdict: str = "fail"
    hits: tuple[str, ...] = ()
    misses: tuple[str, ...] = ()
    reasoning: str = ""
    error: str | None = None
    children: tuple[EvaluatorResult, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)


def result(
    spec: EvaluatorSpec, score: float, hits: Sequence[str] = (), misses: Sequence[str] = (), **extra: Any
) -> EvaluatorResult:
    score = clamp(score)
    verdict = extra.pop("verdict", None) or verdict_of(score)
    return EvaluatorResult(spec.name, spec.type, score, spec.weight, verdict, tuple(hits), tuple(misses), **extra)


def failed(spec: EvaluatorSpec, reason: str) -> EvaluatorResult:
    """An evaluator that could not run: score 0 at its weight, with the reason."""
    return EvaluatorResult(spec.name, spec.type, 0.0, spec.weight, "fail", (), (reason,), reason, error=reason)


def case_score(results: Sequence[EvaluatorResult], required: Sequence[float | None]) -> float:
    """The weighted mean, or 0 when a required evaluator (4.x ``required``/``min_score``) is below its floor."""
    if any(floor is not None and r.score < floor for r, floor in zip(results, required, strict=True)):
        return 0.0
    return weighted_mean(results)


def negated(found: EvaluatorResult) -> EvaluatorResult:
    """4.x ``negate``: 1 − score, the verdict flipped, hits and misses swapped."""
    from dataclasses import replace

    score = clamp(1.0 - found.score)
    flipped = {"pass": "fail", "fail": "pass"}.get(found.verdict, verdict_of(score))
    return replace(found, score=score, verdict=flipped, hits=found.misses, misses=found.hits)


def weighted_mean(results: Sequence[EvaluatorResult]) -> float:
    """Σ weight·score ÷ Σ weight; weight-0 evaluators are excluded; no weight at all → 0."""
    total = sum(r.weight for r in results)
    if total <= 0:
        return 0.0
    return sum(r.weight * r.score for r in results) / total


# -- tool trajectory ---------------------------------------------------------------------------------------


def _deep_equal(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(_deep_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_deep_equal(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def _field(value: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def args_match(expected: ExpectedTool, actual: Any) -> bool:
    """No constraint, ``any`` or ``ignore`` matches; otherwise ``expected.args_match`` decides: ``superset``
    (every key named is deep-equal in the call), ``exact``, ``subset`` (every key of the call is expected and
    equal), or a list of dotted fields compared one by one."""
    mode = expected.args_match
    if expected.args is None or expected.args == "any" or mode == "ignore":
        return True
    if not isinstance(actual, Mapping):
        return False
    wanted = expected.args
    if isinstance(mode, tuple):
        return all(_deep_equal(_field(wanted, f), _field(actual, f)) for f in mode if _field(wanted, f) is not None)
    if mode == "exact":
        return _deep_equal(dict(wanted), dict(actual))
    if mode == "subset":
        return all(key in wanted and _deep_equal(wanted[key], value) for key, value in actual.items())
    return all(key in actual and _deep_equal(value, actual[key]) for key, value in wanted.items())


def tool_trajectory(spec: EvaluatorSpec, calls: Sequence[ToolCall], *, answered: bool = False) -> EvaluatorResult:
    """Score the answer's tool calls. No calls scores 0 ("no trace") — except, as in 4.x, for sequence modes
    when the target did answer (``answered``), where an empty expectation still passes."""
    if not calls and (spec.mode == "any_order" or not answered):
        return result(spec, 0.0, (), ("No tool calls in the answer",))
    modes = {"any_order": _any_order, "in_order": _in_order, "exact": _exact, "superset": _superset, "subset": _subset}
    return modes[spec.mode](spec, calls)


def _any_order(spec: EvaluatorSpec, calls: Sequence[ToolCall]) -> EvaluatorResult:
    if not spec.minimums:
        return result(spec, 1.0, ("No tool requirements specified",))
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.tool] = counts.get(call.tool, 0) + 1
    hits: list[str] = []
    misses: list[str] = []
    for tool, required in spec.minimums.items():
        line = f"{tool}: called {counts.get(tool, 0)} times (required ≥{required})"
        (hits if counts.get(tool, 0) >= required else misses).append(line)
    return result(spec, len(hits) / len(spec.minimums), hits, misses)


def _in_order(spec: EvaluatorSpec, calls: Sequence[ToolCall]) -> EvaluatorResult:
    """Greedy forward scan: each expected tool takes the next call of that name; a wrong-args match is spent."""
    if not spec.expected:
        return result(spec, 1.0, ("No tool sequence specified",))
    hits, misses, position = [], [], 0
    for index, expected in enumerate(spec.expected):
        while position < len(calls) and calls[position].tool != expected.tool:
            position += 1
        if position >= len(calls):
            misses.append(f"Expected {expected.tool} at position {index}, not found in remaining trace")
            continue
        if args_match(expected, calls[position].input):
            hits.append(f"Found {expected.tool} at position {position}")
        else:
            misses.append(f"Expected {expected.tool} at position {index}: found at {position} but args mismatch")
        position += 1
    return result(spec, len(hits) / len(spec.expected), hits, misses)


def _exact(spec: EvaluatorSpec, calls: Sequence[ToolCall]) -> EvaluatorResult:
    if not spec.expected:
        return result(spec, 1.0, ("No tool sequence specified",))
    hits, misses = [], []
    if len(calls) != len(spec.expected):
        misses.append(f"Expected {len(spec.expected)} tool calls, got {len(calls)}")
    for index, expected in enumerate(spec.expected):
        if index >= len(calls):
            misses.append(f"Position {index}: expected {expected.tool}, got nothing")
        elif calls[index].tool != expected.tool:
            misses.append(f"Position {index}: expected {expected.tool}, got {calls[index].tool}")
        elif not args_match(expected, calls[index].input):
            misses.append(f"Position {index}: {expected.tool} args mismatch")
        else:
            hits.append(f"Position {index}: {expected.tool}")
    return result(spec, len(hits) / len(spec.expected), hits, misses)


def _superset(spec: EvaluatorSpec, calls: Sequence[ToolCall]) -> EvaluatorResult:
    """4.x: each expected call matches a distinct actual call anywhere."""
    if not spec.expected:
        return result(spec, 1.0, ("No expected tools specified",))
    hits: list[str] = []
    misses: list[str] = []
    used: set[int] = set()
    for expected in spec.expected:
        found = next(
            (
                j
                for j, c in enumerate(calls)
                if j not in used and c.tool == expected.tool and args_match(expected, c.input)
            ),
            None,
        )
        if found is None:
            misses.append(f"Expected {expected.tool} not found in actual trajectory")
        else:
            used.add(found)
            hits.append(f"Found {expected.tool} at position {found}")
    return result(spec, len(hits) / len(spec.expected), hits, misses)


def _subset(spec: EvaluatorSpec, calls: Sequence[ToolCall]) -> EvaluatorResult:
    """4.x: every actual call must match some expected (allowed) call."""
    if not calls:
        return result(spec, 1.0, ("No actual tool calls (trivially a subset)",))
    if not spec.expected:
        return result(spec, 0.0, (), (f"{len(calls)} unexpected tool call(s) with empty allowed list",))
    hits: list[str] = []
    misses: list[str] = []
    for index, call in enumerate(calls):
        allowed = any(call.tool == e.tool and args_match(e, call.input) for e in spec.expected)
        line = f"Position {index}: {call.tool} is {'in' if allowed else 'not in'} allowed set"
        (hits if allowed else misses).append(line)
    return result(spec, len(hits) / len(calls), hits, misses)


# -- field accuracy ----------------------------------------------------------------------------------------

_DATE_FORMATS = {"YYYY": "%Y", "MMM": "%b", "MM": "%m", "DD": "%d"}


def parse_json_answer(text: str) -> Any:
    """The answer as JSON (a fenced ```json block is unwrapped); None when it is not JSON."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None


def lookup(value: Any, path: str) -> tuple[bool, Any]:
    """``a.b[0].c`` in nested objects; (False, None) when absent."""
    current = value
    for part in path.replace("[", ".").replace("]", "").split("."):
        if part == "":
            continue
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return False, None
    return True, current


def _as_date(value: Any, formats: Sequence[str]) -> datetime | None:
    for spelled in (*formats, "YYYY-MM-DD"):
        pattern = spelled
        for token, directive in _DATE_FORMATS.items():
            pattern = pattern.replace(token, directive)
        try:
            return datetime.strptime(str(value), pattern)
        except ValueError:
            continue
    return None


def field_matches(rule: Mapping[str, Any], expected: Any, actual: Any) -> bool:
    match = rule.get("match", "exact")
    if match == "numeric_tolerance":
        try:
            a, e = float(actual), float(expected)
        except (TypeError, ValueError):
            return False
        tolerance = float(rule.get("tolerance", 0))
        return abs(a - e) <= (tolerance * abs(e) if rule.get("relative") else tolerance)
    if match == "date":
        formats = rule.get("formats") or []
        left, right = _as_date(expected, formats), _as_date(actual, formats)
        return left is not None and left == right
    return _deep_equal(expected, actual)


def field_accuracy(spec: EvaluatorSpec, answer_text: str, reference: Any) -> EvaluatorResult:
    actual = parse_json_answer(answer_text)
    expected = parse_json_answer(reference) if isinstance(reference, str) else reference
    if actual is None:
        return result(spec, 0.0, (), ("The answer is not JSON",))
    fields = spec.config.get("fields") or []
    hits: list[str] = []
    misses: list[str] = []
    total = matched = 0.0
    for rule in fields:
        if not isinstance(rule, Mapping) or not isinstance(rule.get("path"), str):
            continue
        weight = float(rule.get("weight", 1.0))
        total += weight
        _, want = lookup(expected, rule["path"])
        found, got = lookup(actual, rule["path"])
        if found and field_matches(rule, want, got):
            matched += weight
            hits.append(f"{rule['path']}: matched")
        else:
            misses.append(f"{rule['path']}: expected {want!r}, got {got!r}" if found else f"{rule['path']}: missing")
    return result(spec, matched / total if total else 0.0, hits, misses)


# -- execution metrics -------------------------------------------------------------------------------------


def threshold_check(spec: EvaluatorSpec, label: str, observed: float | None, limit_key: str) -> EvaluatorResult:
    limit = spec.config.get(limit_key)
    if not isinstance(limit, int | float) or isinstance(limit, bool):
        return failed(spec, f"{spec.type} needs a numeric '{limit_key}'")
    if observed is None:
        return result(spec, 0.0, (), (f"no {label} reported by the target",))
    line = f"{label} {observed:g} (limit {limit:g})"
    return result(spec, 1.0, (line,)) if observed <= limit else result(spec, 0.0, (), (line,))


def token_usage(
    spec: EvaluatorSpec, input_tokens: int, output_tokens: int, cached: int, reported: bool
) -> EvaluatorResult:
    """1 when every limit given (``max_input``, ``max_output``, ``max_total`` = input + output + cached) holds,
    else 0 (as 4.x); 0 with a miss when the target reported no usage."""
    observed = {
        "max_input": input_tokens,
        "max_output": output_tokens,
        "max_total": input_tokens + output_tokens + cached,
    }
    given = {k: v for k, v in spec.config.items() if k in observed and isinstance(v, int | float)}
    if not given:
        return failed(spec, "token_usage needs max_total, max_input or max_output")
    if not reported:
        return result(spec, 0.0, (), ("no token usage reported by the target",))
    hits: list[str] = []
    misses: list[str] = []
    for key in ("max_input", "max_output", "max_total"):
        if key in given:
            label = key.removeprefix("max_").capitalize()
            ok = observed[key] <= given[key]
            (hits if ok else misses).append(f"{label} tokens {observed[key]} {'<=' if ok else '>'} {given[key]:g}")
    return result(spec, 0.0 if misses else 1.0, hits, misses)

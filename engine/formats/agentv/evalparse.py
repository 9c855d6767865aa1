"""Evaluator entries of an eval file → :class:`EvaluatorSpec`; a malformed entry rejects its case."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import FileIssue
from engine.formats.agentv.model import (
    ARGS_MATCH_MODES,
    EVALUATOR_TYPES,
    TRAJECTORY_MODES,
    TRAJECTORY_MODES_4X,
    ArgsMatch,
    Dialect,
    EvaluatorSpec,
    ExpectedTool,
    Rubric,
    canonical_type,
)
from engine.propositions.yamlsource import Document, FieldPath

#: 4.x evaluator types drift recognises but does not run (they need agent internals drift has no view of)
NOT_RUN_4X = frozenset({"execution-metrics", "skill-trigger", "inline-assert"})


class CaseRejected(Exception):
    def __init__(self, issue: FileIssue) -> None:
        super().__init__(str(issue))
        self.issue = issue


@dataclass(frozen=True, slots=True)
class Ctx:
    document: Document
    base_dir: Path
    dialect: Dialect

    def reject(self, where: FieldPath, message: str) -> CaseRejected:
        return CaseRejected(self.document.issue(where, message))


def parse_evaluators(ctx: Ctx, raw: Any, where: FieldPath) -> tuple[EvaluatorSpec, ...]:
    if not isinstance(raw, list):
        raise ctx.reject(where, "must be a list of evaluators")
    return tuple(parse_evaluator(ctx, item, (*where, index)) for index, item in enumerate(raw))


def weight_of(ctx: Ctx, raw: Mapping[str, Any], where: FieldPath, key: str = "weight") -> float:
    value = raw.get(key, 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ctx.reject((*where, key), f"weight must be a finite number >= 0, got {value!r}")
    return float(value)


def parse_evaluator(ctx: Ctx, raw: Any, where: FieldPath) -> EvaluatorSpec:
    if not isinstance(raw, Mapping):
        raise ctx.reject(where, "an evaluator must be a mapping with at least 'type'")
    raw_type = raw.get("type")
    kind = canonical_type(raw_type) if isinstance(raw_type, str) else None
    if kind is None and isinstance(raw_type, str) and raw_type.replace("_", "-") in NOT_RUN_4X:
        message = f"evaluator type {raw_type!r} (agentv 4.x) is not run by drift; see docs/formats/agentv.md"
        raise ctx.reject((*where, "type"), message)
    if kind is None:
        supported = ", ".join(EVALUATOR_TYPES)
        raise ctx.reject((*where, "type"), f"unknown evaluator type {raw_type!r}; supported: {supported}")
    name = raw.get("name")
    spec = EvaluatorSpec(
        name=name if isinstance(name, str) and name else str(raw_type),
        type=kind,
        weight=weight_of(ctx, raw, where),
        config=dict(raw),
        line=ctx.document.line_of(where),
        negate=raw.get("negate") is True,
        required_min=_required_min(raw),
    )
    return _specialise(ctx, spec, raw, where)


def _specialise(ctx: Ctx, spec: EvaluatorSpec, raw: Mapping[str, Any], where: FieldPath) -> EvaluatorSpec:
    from dataclasses import replace

    if spec.type == "tool_trajectory":
        return _trajectory(ctx, spec, raw, where)
    if spec.type == "code_judge":
        return replace(spec, argv=parse_argv(ctx, raw, where))
    if spec.type == "rubric":
        key = "rubrics" if "rubrics" in raw else "criteria"
        return replace(spec, rubrics=parse_rubrics(ctx, raw.get(key), (*where, key)))
    if spec.type == "composite":
        children = parse_evaluators(ctx, raw.get("evaluators", raw.get("assertions")), (*where, "evaluators"))
        return replace(spec, children=children)
    return spec


#: 4.x: a required evaluator without min_score must reach the pass threshold
PASS_THRESHOLD = 0.8


def _required_min(raw: Mapping[str, Any]) -> float | None:
    """4.x gating: ``required: true`` (with ``min_score`` in (0, 1], default 0.8) or ``required: 0.x``."""
    required, min_score = raw.get("required"), raw.get("min_score")
    floor = float(min_score) if isinstance(min_score, int | float) and 0 < min_score <= 1 else None
    if required is True:
        return floor if floor is not None else PASS_THRESHOLD
    if isinstance(required, int | float) and not isinstance(required, bool) and 0 < required <= 1:
        return floor if floor is not None else float(required)
    return None


def parse_argv_value(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """The argv of ``script`` / ``command`` / ``path`` (a list, or a string split as a shell command line)."""
    value = next((raw[k] for k in ("script", "command", "path") if k in raw), None)
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, list):
        return tuple(str(part) for part in value)
    return ()


def parse_argv(ctx: Ctx, raw: Mapping[str, Any], where: FieldPath) -> tuple[str, ...]:
    """``script`` (seed) / ``command`` (4.x) / ``path``: an argv list, or a string split as a shell command line."""
    key = next((k for k in ("script", "command", "path") if k in raw), "script")
    value = raw.get(key)
    if isinstance(value, str):
        try:
            argv = tuple(shlex.split(value))
        except ValueError as exc:
            raise ctx.reject((*where, key), f"cannot split the command line: {exc}") from exc
    elif isinstance(value, list) and all(isinstance(part, str | int | float) for part in value):
        argv = tuple(str(part) for part in value)
    else:
        raise ctx.reject((*where, key), "a code judge needs 'script' (or 'command'): an argv list or a command line")
    if not argv:
        raise ctx.reject((*where, key), "the code judge command is empty")
    return argv


def _trajectory(ctx: Ctx, spec: EvaluatorSpec, raw: Mapping[str, Any], where: FieldPath) -> EvaluatorSpec:
    from dataclasses import replace

    mode = raw.get("mode", "any_order")
    modes = TRAJECTORY_MODES_4X if ctx.dialect == "4.x" else TRAJECTORY_MODES
    if mode not in modes:
        raise ctx.reject((*where, "mode"), f"invalid mode {mode!r}; supported modes: {', '.join(modes)}")
    default_match = _args_match(ctx, raw, where, "exact" if ctx.dialect == "4.x" else "superset")
    minimums = raw.get("minimums") or {}
    if not isinstance(minimums, Mapping) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in minimums.values()
    ):
        raise ctx.reject((*where, "minimums"), "minimums must map tool names to whole numbers >= 0")
    expected_raw = raw.get("expected") or []
    if not isinstance(expected_raw, list):
        raise ctx.reject((*where, "expected"), "expected must be a list of {tool, args?}")
    expected = []
    for index, item in enumerate(expected_raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("tool"), str):
            raise ctx.reject((*where, "expected", index), "each expected call needs a string 'tool'")
        args = item.get("args")
        if args is not None and args != "any" and not isinstance(args, Mapping):
            raise ctx.reject((*where, "expected", index, "args"), "args must be 'any' or a mapping")
        match = _args_match(ctx, item, (*where, "expected", index), default_match)
        expected.append(ExpectedTool(item["tool"], args, match))
    return replace(spec, minimums={str(k): int(v) for k, v in minimums.items()}, expected=tuple(expected))


def _args_match(ctx: Ctx, raw: Mapping[str, Any], where: FieldPath, default: ArgsMatch) -> ArgsMatch:
    value = raw.get("args_match", raw.get("argsMatch", default))
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if value not in ARGS_MATCH_MODES:
        allowed = ", ".join(ARGS_MATCH_MODES)
        raise ctx.reject((*where, "args_match"), f"invalid args_match {value!r}; use {allowed} or a list of fields")
    return str(value)


def parse_rubrics(ctx: Ctx, raw: Any, where: FieldPath) -> tuple[Rubric, ...]:
    """Strings (required, weight 1) or ``{id, description|outcome, weight, required}``; ids default rubric-N."""
    if not isinstance(raw, list) or not raw:
        raise ctx.reject(where, "rubrics must be a non-empty list of strings or {id, description, weight, required}")
    rubrics = []
    for index, item in enumerate(raw):
        default_id = f"rubric-{index + 1}"
        if isinstance(item, str):
            rubrics.append(Rubric(default_id, item))
            continue
        if not isinstance(item, Mapping):
            raise ctx.reject((*where, index), "a rubric is a string or a mapping")
        text = item.get("description", item.get("outcome", item.get("criteria")))
        if not isinstance(text, str) or not text.strip():
            raise ctx.reject((*where, index), "a rubric needs a 'description'")
        required = item.get("required", True)
        if not isinstance(required, bool):
            raise ctx.reject((*where, index, "required"), "required must be true or false")
        rubric_id = item.get("id", default_id)
        rubrics.append(Rubric(str(rubric_id), text, weight_of(ctx, item, (*where, index)), required))
    return tuple(rubrics)

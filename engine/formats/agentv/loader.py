"""Read an AgentV eval file (either dialect) into :class:`EvalFile`, reporting every problem with its line.

Cases missing an id, an expected outcome or an input are reported (``FILE:LINE: evalcases.N: case skipped…``)
and left out; a case whose evaluators are malformed (unknown type, bad weight, bad trajectory mode…) is rejected
the same way. File-level problems (not a mapping, no case list) leave no cases. Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.errors import FileIssue
from engine.formats.agentv.evalparse import CaseRejected, Ctx, parse_evaluators, parse_rubrics
from engine.formats.agentv.model import Dialect, EvalCase, EvalFile, EvaluatorSpec, canonical_type
from engine.propositions.yamlsource import Document, FieldPath, read_yaml

SEED_LISTS = ("evalcases", "eval_cases")
_ROLES = {"system", "user", "assistant", "tool"}


def detect_dialect(data: Any) -> tuple[Dialect, str] | None:
    """The dialect and the key of the case list, from the top-level keys only."""
    if not isinstance(data, Mapping):
        return None
    for key in SEED_LISTS:
        if key in data:
            return "seed", key
    if "tests" in data:
        return "4.x", "tests"
    return None


def load_eval_file(path: Path) -> tuple[EvalFile | None, list[FileIssue]]:
    """A YAML eval file, or a ``.jsonl`` dataset (one case per line, defaults from a sidecar YAML)."""
    if path.suffix == ".jsonl":
        from engine.formats.agentv.jsonl import read_jsonl, sidecar_of

        document = read_jsonl(path)
        if document.data is None:
            return None, list(document.issues)
        loaded, issues = load_document(document, path)
        if loaded is not None:
            loaded = replace(loaded, sidecar=sidecar_of(path))
        return loaded, [*document.issues, *issues]
    document = read_yaml(path)
    if document.issues:
        return None, list(document.issues)
    return load_document(document, path)


def load_document(document: Document, path: Path) -> tuple[EvalFile | None, list[FileIssue]]:
    found = detect_dialect(document.data)
    if found is None:
        keys = ", ".join((*SEED_LISTS, "tests"))
        return None, [document.issue((), f"not an AgentV eval file: expected a list under one of {keys}")]
    dialect, list_key = found
    data: Mapping[str, Any] = document.data
    raw_cases = data[list_key]
    if not isinstance(raw_cases, list):
        return None, [document.issue((list_key,), "must be a list of cases")]
    issues: list[FileIssue] = []
    ctx = Ctx(document, path.parent, dialect)
    defaults = _file_evaluators(ctx, data, issues)
    dataset = str(data.get("dataset") or data.get("name") or path.name.split(".")[0])
    _default_kind(ctx, data, (), issues)
    cases = []
    for index, raw in enumerate(raw_cases):
        where: FieldPath = (list_key, index)
        try:
            case = _case(ctx, raw, where, defaults, dataset)
        except CaseRejected as exc:
            issues.append(exc.issue)
            continue
        if case is not None:
            _default_kind(ctx, raw, where, issues)
            cases.append(case)
        else:
            issues.append(_skipped(document, raw, where, dialect))
    _duplicates(document, list_key, cases, issues)
    execution = data.get("execution")
    target = execution.get("target") if isinstance(execution, Mapping) else None
    target = target if isinstance(target, str) else data.get("target")
    description = data.get("description")
    return EvalFile(
        path,
        dialect,
        tuple(cases),
        target if isinstance(target, str) else None,
        description if isinstance(description, str) else "",
    ), issues


def _file_evaluators(ctx: Ctx, data: Mapping[str, Any], issues: list[FileIssue]) -> tuple[EvaluatorSpec, ...]:
    execution = data.get("execution")
    for where, raw in (
        (("execution", "evaluators"), execution.get("evaluators") if isinstance(execution, Mapping) else None),
        (("evaluators",), data.get("evaluators")),
        (("assertions",), data.get("assertions")),
    ):
        if raw is not None:
            try:
                return parse_evaluators(ctx, raw, where)
            except CaseRejected as exc:
                issues.append(exc.issue)
                return ()
    return ()


def _default_kind(ctx: Ctx, raw: Mapping[str, Any], where: FieldPath, issues: list[FileIssue]) -> None:
    """Report an ``evaluator`` (the default kind) other than llm_judge, the only one that runs without settings."""
    from engine.formats.agentv.jsonl import default_kind_problem

    value = raw.get("evaluator")
    if value is not None and not (isinstance(value, str) and canonical_type(value) == "llm_judge"):
        issues.append(ctx.document.issue((*where, "evaluator"), default_kind_problem(value)))


def _target(raw: Mapping[str, Any]) -> str | None:
    execution = raw.get("execution")
    target = execution.get("target") if isinstance(execution, Mapping) else None
    return target if isinstance(target, str) and target.strip() else None


def _skipped(document: Document, raw: Any, where: FieldPath, dialect: Dialect) -> FileIssue:
    if not isinstance(raw, Mapping):
        return document.issue(where, "case skipped: a case must be a mapping")
    missing = []
    if not isinstance(raw.get("id"), str) or not str(raw.get("id")).strip():
        missing.append("id")
    if outcome_of(raw, dialect) is None:
        missing.append(
            "criteria (or expected_output, or assertions)" if dialect == "4.x" else "expected_outcome (or outcome)"
        )
    if input_messages(raw, dialect) is None:
        missing.append("input" if dialect == "4.x" else "input_messages (or input)")
    label = f"case {raw['id']!r}" if isinstance(raw.get("id"), str) else "case"
    return document.issue(where, f"{label} skipped: missing or invalid {', '.join(missing)}")


def _duplicates(document: Document, list_key: str, cases: list[EvalCase], issues: list[FileIssue]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            issues.append(FileIssue(document.file, case.line, list_key, f"duplicate case id {case.id!r}"))
        seen.add(case.id)


def _case(ctx: Ctx, raw: Any, where: FieldPath, defaults: tuple[EvaluatorSpec, ...], dataset: str) -> EvalCase | None:
    if not isinstance(raw, Mapping):
        return None
    case_id = raw.get("id")
    outcome = outcome_of(raw, ctx.dialect)
    inputs = input_messages(raw, ctx.dialect)
    if not isinstance(case_id, str) or not case_id.strip() or outcome is None or inputs is None:
        return None
    evaluators = _case_evaluators(ctx, raw, where) or defaults
    conversation = raw.get("conversation_id")
    return EvalCase(
        id=case_id,
        expected_outcome=outcome,
        input_messages=inputs,
        expected_messages=expected_messages(raw),
        evaluators=evaluators,
        source=ctx.base_dir / Path(ctx.document.file).name,
        line=ctx.document.line_of(where),
        dialect=ctx.dialect,
        dataset=dataset,
        conversation_id=conversation if isinstance(conversation, str) else None,
        target=_target(raw),
    )


def _case_evaluators(ctx: Ctx, raw: Mapping[str, Any], where: FieldPath) -> tuple[EvaluatorSpec, ...]:
    found: tuple[EvaluatorSpec, ...] = ()
    execution = raw.get("execution")
    if isinstance(execution, Mapping) and execution.get("evaluators") is not None:
        found = parse_evaluators(ctx, execution["evaluators"], (*where, "execution", "evaluators"))
    elif raw.get("assertions") is not None:
        found = parse_evaluators(ctx, raw["assertions"], (*where, "assertions"))
    elif raw.get("evaluators") is not None:
        found = parse_evaluators(ctx, raw["evaluators"], (*where, "evaluators"))
    if raw.get("rubrics") is not None:
        rubrics = parse_rubrics(ctx, raw["rubrics"], (*where, "rubrics"))
        line = ctx.document.line_of((*where, "rubrics"))
        found = (EvaluatorSpec("rubric", "rubric", rubrics=rubrics, line=line), *found)
    return found


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first key present (canonical names come first, so they win over aliases)."""
    for key in keys:
        if raw.get(key) is not None:
            return raw[key]
    return None


def outcome_of(raw: Mapping[str, Any], dialect: Dialect) -> str | None:
    """The expected outcome; 4.x reads ``criteria`` (``expected_outcome`` deprecated) and needs it only when the
    test has neither ``expected_output`` nor ``assertions`` (then the outcome is empty)."""
    if dialect == "seed":
        outcome = _first(raw, ("expected_outcome", "outcome"))
        return outcome if isinstance(outcome, str) else None
    outcome = raw.get("criteria") or raw.get("expected_outcome")
    if isinstance(outcome, str) and outcome:
        return outcome
    has_spec = raw.get("expected_output") is not None or raw.get("assertions") is not None
    return "" if has_spec else None


def input_messages(raw: Mapping[str, Any], dialect: Dialect) -> tuple[Mapping[str, Any], ...] | None:
    """``input_messages`` (seed) wins over ``input``; a string is one user message; anything else is invalid."""
    value = raw.get("input") if dialect == "4.x" else _first(raw, ("input_messages", "input"))
    if isinstance(value, str):
        return ({"role": "user", "content": value},)
    if isinstance(value, list) and value and all(_is_message(m) for m in value):
        return tuple(value)
    return None


def expected_messages(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """``expected_messages`` wins over ``expected_output``; a string or an object is one assistant message."""
    value = _first(raw, ("expected_messages", "expected_output"))
    if value is None:
        return ()
    if isinstance(value, list) and all(_is_message(m) for m in value):
        return tuple(value)
    return ({"role": "assistant", "content": value},)


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("role") in _ROLES

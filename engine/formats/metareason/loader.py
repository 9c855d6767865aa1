"""Reading and validating a MetaReason prompt-family file: every problem as ``FILE:LINE: field.path: message``.

Checks, in order: the YAML itself (:func:`engine.propositions.yamlsource.read_yaml`); the era (files of the
later ``spec_id``/``pipeline`` formats get one "unsupported format" issue); the fields (:mod:`.model`); then
the rules that relate fields (seed 002 "Validation Rules" and the ones this implementation adds):

* exactly one of ``schema`` / ``axes``, with at least one axis; at least one oracle;
* every variable of ``prompt_template`` is an axis (``{{x}}`` and ``{{ x }}`` alike); the template parses and
  renders in the sandbox with the first value of every axis;
* ``stratified_by`` names categorical axes; ``optimization_criterion`` only with ``latin_hypercube``;
* a ``custom`` oracle is registered by the installation (:mod:`.custom`).

Categorical axes the template does not use are *warnings* (upstream's own valid examples have them);
continuous ones are not, since they usually parameterise the call (``temperature``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from engine.errors import FileIssue, PropositionFileError
from engine.formats.metareason import model as m
from engine.formats.metareason.custom import ENTRY_POINT_GROUP, CustomOracles
from engine.formats.metareason.rendering import TemplateProblem, compile_template, render, variables
from engine.propositions.models import suggestion
from engine.propositions.yamlsource import Document, FieldPath, read_yaml

AXIS_MODELS: dict[str, type[BaseModel]] = {
    "categorical": m.CategoricalAxis,
    "truncated_normal": m.TruncatedNormalAxis,
    "uniform": m.UniformAxis,
    "beta": m.BetaAxis,
}
ORACLE_MODELS: dict[str, type[BaseModel]] = {
    "embedding_similarity": m.EmbeddingSimilarityOracle,
    "llm_judge": m.LlmJudgeOracle,
    "statistical_calibration": m.StatisticalCalibrationOracle,
    "custom": m.CustomOracle,
}
_NESTED: dict[FieldPath, type[BaseModel]] = {
    (): m.PromptFamily,
    ("sampling",): m.Sampling,
    ("primary_model",): m.PrimaryModel,
    ("statistical_config",): m.StatisticalConfig,
    ("statistical_config", "prior"): m.Prior,
    ("statistical_config", "inference"): m.Inference,
    ("statistical_config", "output"): m.StatisticsOutput,
    ("domain_context",): m.DomainContext,
    ("metadata",): m.Metadata,
}


@dataclass(frozen=True, slots=True)
class Loaded:
    """The outcome of reading one file: the family (None when any error was found), errors and warnings."""

    path: Path
    family: m.PromptFamily | None
    errors: tuple[FileIssue, ...]
    warnings: tuple[FileIssue, ...] = ()


def check_family(path: Path, custom: Collection[str] | None = None) -> Loaded:
    """Read and validate ``path``; ``custom`` names the registered custom oracles (default: installed)."""
    document = read_yaml(path)
    if document.issues:
        return Loaded(path, None, document.issues)
    data = document.data
    if not isinstance(data, dict):
        shape = "empty" if data is None else f"a {type(data).__name__}, not a mapping of keys"
        return Loaded(path, None, (document.issue((), f"a prompt family must be a mapping of keys; this is {shape}"),))
    later = [key for key in ("spec_id", "pipeline") if key in data]
    if later:
        return Loaded(path, None, (document.issue((later[0],), _unsupported(later)),))
    try:
        family = m.PromptFamily.model_validate(data)
    except ValidationError as exc:
        return Loaded(path, None, tuple(_issue(document, e) for e in exc.errors(include_url=False)))
    names = CustomOracles.installed().names() if custom is None else custom
    errors = _relations(document, family, names)
    warnings = () if errors else _unused(document, family)
    return Loaded(path, None if errors else family, tuple(errors), warnings)


def read_family(path: Path, custom: Collection[str] | None = None) -> m.PromptFamily:
    """The family in ``path``, or :class:`PropositionFileError` with every located issue."""
    loaded = check_family(path, custom)
    if loaded.family is None:
        raise PropositionFileError(list(loaded.errors))
    return loaded.family


def _unsupported(keys: list[str]) -> str:
    return (
        f"unsupported format: '{keys[0]}' marks a later MetaReason format (spec_id/pipeline, 2025-08 and after); "
        "drift reads the prompt-family format of seed 002 (prompt_id, prompt_template, schema, oracles)"
    )


# -- pydantic errors -> located issues -----------------------------------------------------------------------


def _issue(document: Document, error: ErrorDetails) -> FileIssue:
    path = _strip_tags(tuple(error["loc"]))
    kind = error["type"]
    if kind == "missing":
        return document.issue(path, "required key is missing")
    if kind == "extra_forbidden":
        key = str(path[-1])
        allowed = _allowed_keys(document.data, path[:-1])
        hint = suggestion(key, allowed) or (f"; allowed keys: {', '.join(allowed)}" if allowed else "")
        return document.issue(path, f"unknown key '{key}'{hint}")
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        expected = str((error.get("ctx") or {}).get("expected_tags", "")).replace("'", "")
        found = _lookup(document.data, (*path, "type"))
        what = f"unknown type {found!r}" if found is not None else "a 'type' is required"
        return document.issue((*path, "type"), f"{what}; expected one of: {expected}")
    message = error["msg"].removeprefix("Value error, ")
    if kind.endswith("_type") or kind.startswith(("greater", "less", "literal", "too_short", "finite")):
        message += f" (got {_describe(error.get('input'))})"
    if isinstance(error.get("input"), str) and str(error.get("input")).startswith("${"):
        message += "; ${VAR:default} substitution is not supported"
    return document.issue(path, message[0].lower() + message[1:])


def _strip_tags(loc: FieldPath) -> FieldPath:
    """Drop the discriminator tag pydantic puts after an axis or oracle name: (schema, x, beta, alpha)."""
    if len(loc) >= 3 and loc[0] in {"schema", "axes", "oracles"} and loc[2] in {*AXIS_MODELS, *ORACLE_MODELS}:
        return (*loc[:2], *loc[3:])
    return loc


def _model_at(data: Any, path: FieldPath) -> type[BaseModel] | None:
    if len(path) == 2 and path[0] in {"schema", "axes", "oracles"}:
        kind = _lookup(data, (*path, "type"))
        table = ORACLE_MODELS if path[0] == "oracles" else AXIS_MODELS
        return table.get(kind) if isinstance(kind, str) else None
    return _NESTED.get(path)


def _allowed_keys(data: Any, path: FieldPath) -> tuple[str, ...]:
    model = _model_at(data, path)
    if model is None:
        return ()
    return tuple(field.alias or name for name, field in model.model_fields.items())


def _lookup(data: Any, path: FieldPath) -> Any:
    for part in path:
        found = isinstance(data, dict) and part in data
        found = found or (isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data))
        if not found:
            return None
        data = data[part]
    return data


def _describe(value: Any) -> str:
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return type(value).__name__


# -- rules across fields -------------------------------------------------------------------------------------


def _relations(document: Document, family: m.PromptFamily, custom: Collection[str]) -> list[FileIssue]:
    issues = _axes_and_oracles(document, family)
    issues += _template(document, family)
    issues += _sampling(document, family)
    for name, oracle in family.oracles.items():
        if isinstance(oracle, m.CustomOracle) and oracle.registered_name not in custom:
            registered = ", ".join(sorted(custom)) or "none"
            issues.append(
                document.issue(
                    ("oracles", name, "class_name" if oracle.class_name else "class"),
                    f"custom oracle {oracle.registered_name!r} is not registered by this installation "
                    f"(entry point group {ENTRY_POINT_GROUP}; registered: {registered}); "
                    "drift never imports a module named in a file",
                )
            )
    return issues


def _axes_and_oracles(document: Document, family: m.PromptFamily) -> list[FileIssue]:
    issues: list[FileIssue] = []
    if family.schema_ is None and family.axes is None:
        issues.append(document.issue(("schema",), "required key is missing (the axes, as 'schema' or 'axes')"))
    elif family.schema_ is not None and family.axes is not None:
        issues.append(document.issue(("axes",), "give the axes once, as 'schema' or as 'axes', not both"))
    elif not family.axis_map:
        issues.append(document.issue((family.axes_key,), "at least one axis is required"))
    if not family.oracles:
        issues.append(document.issue(("oracles",), "at least one oracle is required"))
    elif all(isinstance(o, m.StatisticalCalibrationOracle) for o in family.oracles.values()):
        issues.append(
            document.issue(("oracles",), "statistical_calibration compares the other oracles' success: add one")
        )
    return issues


def _template(document: Document, family: m.PromptFamily) -> list[FileIssue]:
    where: FieldPath = ("prompt_template",)
    try:
        used = variables(family.prompt_template)
    except TemplateProblem as exc:
        return [document.issue(where, f"{exc} (template line {exc.line})" if exc.line else str(exc))]
    axes = family.axis_map
    missing = sorted(used - set(axes))
    if missing:
        known = ", ".join(axes) or "none"
        return [
            document.issue(
                where,
                f"template variable '{name}' is not an axis in {family.axes_key}{suggestion(name, list(axes))}"
                f" (axes: {known})",
            )
            for name in missing
        ]
    try:
        render(compile_template(family.prompt_template), {name: _probe(axis) for name, axis in axes.items()})
    except TemplateProblem as exc:
        return [document.issue(where, str(exc))]
    return []


def _probe(axis: m.CategoricalAxis | m.ContinuousAxis) -> Any:
    if isinstance(axis, m.CategoricalAxis):
        return axis.values[0]
    if isinstance(axis, m.BetaAxis):
        return axis.alpha / (axis.alpha + axis.beta)
    return (axis.min + axis.max) / 2


def _sampling(document: Document, family: m.PromptFamily) -> list[FileIssue]:
    issues: list[FileIssue] = []
    axes = family.axis_map
    for index, name in enumerate(family.sampling.stratified_by):
        where: FieldPath = ("sampling", "stratified_by", index)
        if name not in axes:
            issues.append(document.issue(where, f"'{name}' is not an axis{suggestion(name, list(axes))}"))
        elif not isinstance(axes[name], m.CategoricalAxis):
            issues.append(document.issue(where, f"'{name}' is not categorical; only categorical axes form strata"))
    if len(set(family.sampling.stratified_by)) != len(family.sampling.stratified_by):
        issues.append(document.issue(("sampling", "stratified_by"), "an axis is named more than once"))
    if family.sampling.optimization_criterion and family.sampling.method != "latin_hypercube":
        issues.append(
            document.issue(
                ("sampling", "optimization_criterion"),
                f"applies to latin_hypercube only, not to method {family.sampling.method!r}",
            )
        )
    return issues


def _unused(document: Document, family: m.PromptFamily) -> tuple[FileIssue, ...]:
    used = variables(family.prompt_template)
    return tuple(
        document.issue((family.axes_key, name), "warning: categorical axis is not used by prompt_template")
        for name, axis in family.axis_map.items()
        if isinstance(axis, m.CategoricalAxis) and name not in used
    )

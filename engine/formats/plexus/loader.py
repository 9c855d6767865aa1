"""Reading and validating Plexus files: scores, scorecards, fragments and data sources.

:func:`inspect` never raises: it returns a :class:`Report` with the file's kind, its errors and warnings (each
``FILE:LINE: field.path: message``) and, when the file can run, the :class:`Scorecard` (a single score is
wrapped in a one-score scorecard). A score without a ``graph`` is a *fragment*: valid, but "not a runnable
score (no graph)". :func:`load_runnable` is the strict entry point of ``predict`` / ``evaluate``.

Besides the models' types, the checks follow the upstream linter (required ``name`` / ``key``, the key
format, allowed ``type`` values, the ``externalId`` / ``external_id`` warning, the empty-document warning) and
the runner's structure rules (known node classes, unique names, existing route targets, compilable templates
and code, known model providers, dependencies that exist and form no cycle).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.errors import ConfigurationError, FileIssue, PropositionFileError
from engine.formats.plexus.datasource import check_data_source, is_data_source
from engine.formats.plexus.model import CLASSIFIER_CLASSES, END, NODE_CLASSES, Node, Score, Scorecard
from engine.formats.plexus.providers import known_provider, unknown_provider_message
from engine.formats.plexus.templates import syntax_error
from engine.propositions.issues import validate_document
from engine.propositions.models import suggestion
from engine.propositions.yamlsource import Document, FieldPath, read_yaml

Kind = Literal["score", "scorecard", "fragment", "data-source", "empty", "invalid"]
KEY_FORMAT = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
NOT_RUNNABLE = "not a runnable score (no graph)"
SCORECARD_KEYS = frozenset({"scores", "sections"})
#: state fields a node's name would overwrite (a node's fields are stored under its name)
RESERVED_NAMES = frozenset({"text", "metadata", "results", "classification", "explanation", "value", "confidence"})


@dataclass(frozen=True)
class Report:
    path: Path
    kind: Kind
    errors: tuple[FileIssue, ...] = ()
    warnings: tuple[FileIssue, ...] = ()
    scorecard: Scorecard | None = None
    not_runnable: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def runnable(self) -> bool:
        return self.ok and self.scorecard is not None and self.not_runnable is None


@dataclass
class _Checks:
    document: Document
    errors: list[FileIssue] = field(default_factory=list)
    warnings: list[FileIssue] = field(default_factory=list)

    def error(self, path: FieldPath, message: str) -> None:
        self.errors.append(self.document.issue(path, message))

    def warn(self, path: FieldPath, message: str) -> None:
        self.warnings.append(self.document.issue(path, message))


def inspect(path: Path) -> Report:
    document = read_yaml(path)
    if document.issues:
        return Report(path, "invalid", errors=document.issues)
    data = document.data
    if data is None:
        warning = FileIssue(str(path), 1, "", "the document is empty")
        return Report(path, "empty", warnings=(warning,), not_runnable="an empty document")
    if not isinstance(data, dict):
        return Report(path, "invalid", errors=(document.issue((), "the top level must be a mapping"),))
    if is_data_source(data):
        errors, warnings = check_data_source(document, data)
        reason = "a data-source configuration, not a score (drift reads datasets from CSV/JSONL files)"
        return Report(path, "data-source" if not errors else "invalid", tuple(errors), tuple(warnings), None, reason)
    if SCORECARD_KEYS & data.keys():
        return _scorecard(path, document)
    return _score(path, document)


def _score(path: Path, document: Document) -> Report:
    score, issues = validate_document(document, Score, "score")
    checks = _Checks(document, list(issues))
    _linter_rules(checks, document.data, (), top_level=True)
    if score is None or checks.errors:
        return Report(path, "invalid", tuple(checks.errors), tuple(checks.warnings))
    _check_score(checks, score, ())
    if checks.errors:
        return Report(path, "invalid", tuple(checks.errors), tuple(checks.warnings))
    card = Scorecard(name=score.name, key=score.key, scores=[score])
    kind: Kind = "score" if score.graph else "fragment"
    return Report(path, kind, (), tuple(checks.warnings), card, None if score.graph else NOT_RUNNABLE)


def _scorecard(path: Path, document: Document) -> Report:
    card, issues = validate_document(document, Scorecard, "scorecard")
    checks = _Checks(document, list(issues))
    _linter_rules(checks, document.data, (), top_level=True)
    if card is None or checks.errors:
        return Report(path, "invalid", tuple(checks.errors), tuple(checks.warnings))
    placed = list(_score_paths(card))
    for where, score in placed:
        _linter_rules(checks, _at(document.data, where), where, top_level=False)
        _check_score(checks, score, where)
    _check_dependencies(checks, placed)
    if checks.errors:
        return Report(path, "invalid", tuple(checks.errors), tuple(checks.warnings))
    missing = [score.name for _, score in placed if not score.graph]
    reason = None
    if not placed:
        reason = "a scorecard without scores"
    elif missing:
        reason = f"{NOT_RUNNABLE}: {', '.join(missing)}"
    return Report(path, "scorecard", (), tuple(checks.warnings), card, reason)


def _score_paths(card: Scorecard) -> list[tuple[FieldPath, Score]]:
    placed: list[tuple[FieldPath, Score]] = [(("scores", i), s) for i, s in enumerate(card.scores)]
    for j, section in enumerate(card.sections):
        placed.extend((("sections", j, "scores", i), s) for i, s in enumerate(section.scores))
    return placed


def _at(data: Any, where: FieldPath) -> Any:
    for part in where:
        data = data[part]
    return data


def _linter_rules(checks: _Checks, data: Any, where: FieldPath, *, top_level: bool) -> None:
    if not isinstance(data, dict):
        return
    if top_level and "key" not in data:
        checks.error((*where, "key"), "required key is missing")
    key = data.get("key")
    if isinstance(key, str) and not KEY_FORMAT.match(key):
        checks.error((*where, "key"), f"key {key!r} must be lower-case letters, digits, '-' or '_' (no spaces)")
    if "externalId" in data and "external_id" in data:
        checks.warn((*where, "external_id"), "both 'externalId' and 'external_id' are set; keep one spelling")


def _check_score(checks: _Checks, score: Score, where: FieldPath) -> None:
    if not known_provider(score.model_provider):
        checks.error((*where, "model_provider"), unknown_provider_message(score.model_provider or ""))
    nodes = score.graph or []
    names = [node.name for node in nodes]
    for index, node in enumerate(nodes):
        at = (*where, "graph", index)
        if names.index(node.name) != index:
            checks.error((*at, "name"), f"node name {node.name!r} is used twice")
        if node.name == END:
            checks.error((*at, "name"), f"{END!r} is reserved for the end of the graph")
        elif node.name in RESERVED_NAMES:
            checks.error((*at, "name"), f"{node.name!r} is a state field; name the node something else")
        _check_node(checks, node, at)
        _check_routes(checks, node, at, set(names))


def _check_node(checks: _Checks, node: Node, at: FieldPath) -> None:
    for key in sorted(node.model_extra or {}):
        checks.warn((*at, key), f"key '{key}' is not used by drift (ignored)")
    if node.node_class not in NODE_CLASSES:
        hint = suggestion(node.node_class, NODE_CLASSES) or f"; known: {', '.join(NODE_CLASSES)}"
        checks.error((*at, "class"), f"unknown node class {node.node_class!r}{hint}")
    if not known_provider(node.model_provider):
        checks.error((*at, "model_provider"), unknown_provider_message(node.model_provider or ""))
    if node.node_class in CLASSIFIER_CLASSES and node.valid_classes is not None:
        if not node.valid_classes:
            checks.error((*at, "valid_classes"), "needs at least one class")
        elif len(node.valid_classes) == 1 and node.node_class == "Classifier":
            checks.error(
                (*at, "valid_classes"),
                "a Classifier with a single valid class cannot be used for free-form extraction; use class: Extractor",
            )
    for key in ("system_message", "user_message"):
        problem = syntax_error(getattr(node, key))
        if problem is not None:
            checks.error((*at, key), f"template line {problem[0]}: {problem[1]}")
    if node.node_class in {"LogicalClassifier", "LogicalNode"}:
        _check_code(checks, node, at)


def _check_code(checks: _Checks, node: Node, at: FieldPath) -> None:
    if not node.code:
        checks.error((*at, "code"), f"a {node.node_class} needs 'code'")
        return
    function = "score" if node.node_class == "LogicalClassifier" else node.function_name
    if function is None:
        checks.error((*at, "function_name"), "a LogicalNode needs 'function_name'")
        return
    try:
        compile(node.code, f"<{node.name}>", "exec")
    except SyntaxError as exc:
        line = checks.document.line_of((*at, "code")) + (exc.lineno or 1)
        where = ".".join(map(str, (*at, "code")))
        checks.errors.append(FileIssue(checks.document.file, line, where, f"Python: {exc.msg}"))
        return
    if not re.search(rf"^\s*def\s+{re.escape(function)}\s*\(", node.code, re.MULTILINE):
        checks.error((*at, "code"), f"the code defines no function '{function}'")


def _check_routes(checks: _Checks, node: Node, at: FieldPath, names: set[str]) -> None:
    targets: list[tuple[FieldPath, str]] = [
        ((*at, "conditions", i, "node"), c.node) for i, c in enumerate(node.conditions) if c.node
    ]
    if node.edge is not None:
        targets.append(((*at, "edge", "node"), node.edge.node))
    for path, target in targets:
        if target != END and target not in names:
            hint = suggestion(target, sorted(names)) or ""
            checks.error(path, f"no node named {target!r} (use {END!r} to end the graph){hint}")
    if node.conditions and node.output:
        checks.warn(
            (*at, "output"),
            "with 'conditions', put 'output' inside each condition (this one applies only when none matches)",
        )


def _check_dependencies(checks: _Checks, placed: list[tuple[FieldPath, Score]]) -> None:
    names = [score.name for _, score in placed]
    for index, (where, score) in enumerate(placed):
        if names.index(score.name) != index:
            checks.error((*where, "name"), f"score name {score.name!r} is used twice")
        for dependency in dependency_names(score):
            if dependency not in names:
                hint = suggestion(dependency, names) or ""
                message = f"no score named {dependency!r} in this scorecard{hint}"
                checks.error((*where, "depends_on", dependency), message)
    graph = {score.name: dependency_names(score) for _, score in placed}
    cycle = _find_cycle(graph)
    if cycle:
        where = placed[names.index(cycle[0])][0]
        checks.error((*where, "depends_on"), f"dependency cycle: {' -> '.join(cycle)}")


def dependency_names(score: Score) -> list[str]:
    if score.depends_on is None:
        return []
    return list(score.depends_on)


def _find_cycle(graph: dict[str, list[str]]) -> list[str]:
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> list[str]:
        state[name] = 1
        for child in graph.get(name, []):
            if state.get(child) == 1:
                return [*trail[trail.index(child) :], child] if child in trail else [name, child]
            if child in graph and state.get(child) is None:
                found = visit(child, [*trail, child])
                if found:
                    return found
        state[name] = 2
        return []

    for name in graph:
        if state.get(name) is None:
            found = visit(name, [name])
            if found:
                return found
    return []


def load_runnable(path: Path, score: str | None = None) -> Scorecard:
    """The scorecard of ``path`` ready to run, or a ConfigurationError saying why it cannot run."""
    if not path.is_file():
        raise ConfigurationError(f"no such file: {path}")
    report = inspect(path)
    if report.errors:
        raise PropositionFileError(list(report.errors))
    if report.scorecard is None or report.kind not in {"score", "scorecard"}:
        raise ConfigurationError(f"{path}: {report.not_runnable or NOT_RUNNABLE}")
    card = report.scorecard
    if score is not None:
        names = [s.name for s in card.all_scores()]
        if score not in names:
            hint = suggestion(score, names) or f"; scores: {', '.join(names)}"
            raise ConfigurationError(f"{path}: no score named {score!r}{hint}")
    elif report.not_runnable:
        raise ConfigurationError(f"{path}: {report.not_runnable}")
    return card

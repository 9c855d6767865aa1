"""Loading intervention files (``<propositions>/interventions/*.yaml``) into :class:`InterventionSpec` values.

Every problem, in every file, is collected and raised together as one :class:`PropositionFileError` whose
issues read ``FILE:LINE: field.path: message`` — the same reader and messages as proposition files
(unknown keys with a did-you-mean hint). Beyond the schema, a loader check rejects unknown functional
precondition names and bad parameters, template variables an effect cannot fill, duplicate or reserved
intervention names, and proposition references that no proposition file defines.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import ConfigurationError, FileIssue, PropositionFileError
from engine.interventions.effects import Effect
from engine.interventions.functional import functional_names, make_functional
from engine.interventions.preconditions import InlineProposition, TextualPrecondition
from engine.interventions.schema import (
    ALL_TARGETS,
    DEFAULT_EFFECT_KEY,
    InterventionFileModel,
    InterventionModel,
    PropositionalModel,
)
from engine.interventions.spec import InterventionSpec, PropositionRef
from engine.interventions.types import DirectiveKind
from engine.models import Dimension
from engine.propositions.issues import validate_document
from engine.propositions.loader import agent_files, load_set
from engine.propositions.models import Window, suggestion
from engine.propositions.templates import placeholders
from engine.propositions.yamlsource import Document, FieldPath, dotted, read_yaml, yaml_files

#: The variables an effect or an intervention claim can use.
EFFECT_VARIABLES: tuple[str, ...] = ("agent_name", "channel_name")
RESERVED_NAMES: tuple[str, ...] = tuple(kind.value for kind in DirectiveKind)
YAML_SUFFIX = ".yaml"


class _Checker:
    """Semantic checks across the files of one directory (names must be unique across files)."""

    def __init__(self, propositions_dir: Path) -> None:
        self.propositions_dir = propositions_dir
        self.names: dict[str, str] = {}
        self._ids: dict[Dimension, tuple[tuple[str, ...], list[FileIssue]]] = {}

    def issues(self, document: Document, index: int, entry: InterventionModel) -> list[FileIssue]:
        base: FieldPath = ("interventions", index)
        issues = self._name(document, base, entry)
        issues += _functional(document, base, entry)
        issues += _templates(document, base, entry)
        if entry.preconditions.propositional is not None:
            issues += self._reference(document, (*base, "preconditions", "propositional"), entry)
        return issues

    def _name(self, document: Document, base: FieldPath, entry: InterventionModel) -> list[FileIssue]:
        where = f"{document.file}:{document.line_of((*base, 'name'))}"
        path = (*base, "name")
        if entry.name in RESERVED_NAMES:
            return [document.issue(path, f"'{entry.name}' is a built-in directive kind; pick another")]
        if entry.name in self.names:
            first = self.names[entry.name]
            return [document.issue(path, f"duplicate intervention name (first defined at {first})")]
        self.names[entry.name] = where
        return []

    def known_ids(self, dimension: Dimension) -> tuple[tuple[str, ...], list[FileIssue]]:
        """Every proposition id of ``dimension`` (defaults and agent files) and any problem reading them."""
        if dimension not in self._ids:
            ids: list[str] = []
            problems: list[FileIssue] = []
            folder = self.propositions_dir / dimension.value
            for agent in [None, *(p.stem for p in agent_files(folder))] if folder.is_dir() else []:
                try:
                    ids.extend(p.id for p in load_set(self.propositions_dir, dimension, agent).propositions)
                except PropositionFileError as exc:
                    problems.extend(i for i in exc.issues if i not in problems)
            self._ids[dimension] = (tuple(dict.fromkeys(ids)), problems)
        return self._ids[dimension]

    def _reference(self, document: Document, path: FieldPath, entry: InterventionModel) -> list[FileIssue]:
        ref = entry.preconditions.propositional
        if ref is None or ref.dimension is None:
            return []
        ids, problems = self.known_ids(ref.dimension)
        if problems:  # reported where they are (a proposition file), not again as this file's: unchecked here
            return []
        if ref.proposition is None:
            if ids:
                return []
            return [document.issue((*path, "dimension"), f"no {ref.dimension.value} propositions exist")]
        if ref.proposition in ids:
            return []
        hint = suggestion(ref.proposition, list(ids))
        message = f"unknown {ref.dimension.value} proposition '{ref.proposition}'{hint}"
        return [document.issue((*path, "proposition"), message)]


def _functional(document: Document, base: FieldPath, entry: InterventionModel) -> list[FileIssue]:
    issues = []
    known = functional_names()
    for name, params in entry.preconditions.functional.items():
        path = (*base, "preconditions", "functional", name)
        if name not in known:
            hint = suggestion(name, known) or f"; known: {', '.join(known)}"
            issues.append(document.issue(path, f"unknown functional precondition '{name}'{hint}"))
            continue
        try:
            make_functional(name, params)
        except (ConfigurationError, ValueError, TypeError) as exc:
            issues.append(document.issue(path, str(exc)))
    return issues


def _templates(document: Document, base: FieldPath, entry: InterventionModel) -> list[FileIssue]:
    texts: list[tuple[FieldPath, str]] = [((*base, "effect", key), text) for key, text in entry.effect.items()]
    pre = entry.preconditions
    if pre.textual is not None:
        texts.append(((*base, "preconditions", "textual"), pre.textual.claim))
    if pre.propositional is not None and pre.propositional.claim is not None:
        texts.append(((*base, "preconditions", "propositional", "claim"), pre.propositional.claim))
    issues = []
    for path, text in texts:
        for name in placeholders(text):
            if name not in EFFECT_VARIABLES:
                hint = suggestion(name, EFFECT_VARIABLES) or f"; use {', '.join(EFFECT_VARIABLES)}"
                issues.append(document.issue(path, f"unknown template variable '{{{{{name}}}}}'{hint}"))
    return issues


def _reference_of(document: Document, path: FieldPath, name: str, model: PropositionalModel) -> PropositionRef:
    inline = None
    if model.claim is not None:
        inline = InlineProposition(
            id=model.id or f"{name}-claim",
            claim=model.claim,
            inverted=model.inverted,
            include_persona=model.include_persona,
        )
    return PropositionRef(
        dimension=model.dimension,
        proposition_id=model.proposition,
        inline=inline,
        threshold=model.threshold,
        scope=model.scope,
        line=document.line_of(path),
        path=dotted(path),
    )


def _spec(document: Document, index: int, entry: InterventionModel, propositions_dir: Path) -> InterventionSpec:
    pre = entry.preconditions
    textual = (
        None
        if pre.textual is None
        else TextualPrecondition(pre.textual.claim, pre.textual.scope, pre.textual.include_persona)
    )
    ref_path: FieldPath = ("interventions", index, "preconditions", "propositional")
    variants = {k: v for k, v in entry.effect.items() if k != DEFAULT_EFFECT_KEY}
    return InterventionSpec(
        name=entry.name,
        effect=Effect(entry.effect[DEFAULT_EFFECT_KEY], variants),
        targets=None if entry.targets == (ALL_TARGETS,) else entry.targets,
        functional=tuple(pre.functional.items()),
        textual=textual,
        propositional=None
        if pre.propositional is None
        else _reference_of(document, ref_path, entry.name, pre.propositional),
        group=entry.group,
        concurrent=entry.concurrent,
        enabled=entry.enabled,
        window=Window(first_n=entry.first_n, last_n=entry.last_n),
        description=entry.description,
        file=document.file,
        line=document.line_of(("interventions", index)),
        propositions_dir=propositions_dir,
    )


def _read(path: Path, checker: _Checker) -> tuple[list[InterventionSpec], list[FileIssue]]:
    document = read_yaml(path)
    model, issues = validate_document(document, InterventionFileModel, "intervention file")
    if model is None:
        return [], issues
    for index, entry in enumerate(model.interventions):
        issues.extend(checker.issues(document, index, entry))
    specs = [_spec(document, i, entry, checker.propositions_dir) for i, entry in enumerate(model.interventions)]
    return specs, issues


def load_intervention_files(paths: list[Path], propositions_dir: Path) -> tuple[InterventionSpec, ...]:
    """Load ``paths`` in order, resolving proposition references under ``propositions_dir``."""
    checker = _Checker(propositions_dir)
    specs: list[InterventionSpec] = []
    issues: list[FileIssue] = []
    for path in paths:
        file_specs, file_issues = _read(path, checker)
        specs.extend(file_specs)
        issues.extend(i for i in file_issues if i not in issues)
    if issues:
        raise PropositionFileError(issues)
    return tuple(specs)


def load_interventions(directory: Path, propositions_dir: Path | None = None) -> tuple[InterventionSpec, ...]:
    """Every ``*.yaml`` in ``directory`` (sorted by name), validated; references resolve under
    ``propositions_dir`` (default: the parent of ``directory``, i.e. the propositions root).
    """
    if not directory.is_dir():
        raise PropositionFileError([FileIssue(str(directory), 0, "", "no such interventions directory")])
    paths = yaml_files(directory, YAML_SUFFIX)
    return load_intervention_files(paths, propositions_dir or directory.parent)

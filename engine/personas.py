"""Persona specs: ``<dir>/personas/<agent_id>.yaml`` (or ``.json``) -> :class:`engine.models.Persona`.

A persona file holds ``id`` (equal to the file name) and ``name``, and any of the TinyTroupe-style fields of
:class:`~engine.models.Persona` (age, nationality, occupation, personality with traits and Big Five, beliefs,
preferences, style, behaviours, skills, relationships…), nested as deep as needed; other keys are kept as
free-form parts of the spec, except a key one edit away from a known field (``behaviors``), which is reported
as a typo. ``fragments: [NAME, …]`` merges ``<dir>/fragments/NAME.yaml`` onto the persona (see
:func:`merge_spec`). Problems are raised as :class:`PropositionFileError` with ``FILE:LINE: field: message``
issues, exactly like proposition files.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.errors import FileIssue, PropositionFileError
from engine.formats.registry import FileKind, top_keys
from engine.models import Persona
from engine.propositions.issues import validate_document
from engine.propositions.loader import PERSONAS_FOLDER, YAML_SUFFIX, check_agent_id, require_directory
from engine.propositions.models import suggestion
from engine.propositions.yamlsource import Document, present, read_yaml, yaml_files

FRAGMENTS_FOLDER = "fragments"
SPEC_SUFFIXES = (YAML_SUFFIX, ".yml", ".json")
_KNOWN_FIELDS = tuple(Persona.model_fields)


def merge_spec(base: Mapping[str, Any], fragment: Mapping[str, Any]) -> dict[str, Any]:
    """``fragment`` merged onto ``base``: mappings merge key by key, lists are extended (items already there
    are not repeated), anything else in the fragment replaces the base's value. Neither input changes."""
    merged = copy.deepcopy(dict(base))
    for key, value in fragment.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_spec(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            merged[key] = old + [copy.deepcopy(v) for v in value if v not in old]
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _typos(document: Document) -> list[FileIssue]:
    """Free-form keys that look like a misspelt known field."""
    data = document.data if isinstance(document.data, dict) else {}
    issues = []
    for key in data:
        if key not in _KNOWN_FIELDS and key != "fragments" and (hint := suggestion(key, _KNOWN_FIELDS)):
            issues.append(document.issue((key,), f"unknown key '{key}'{hint}"))
    return issues


def _fragment_data(directory: Path, name: str, document: Document) -> tuple[dict[str, Any], list[FileIssue]]:
    path = next((directory / FRAGMENTS_FOLDER / f"{name}{s}" for s in SPEC_SUFFIXES
                 if (directory / FRAGMENTS_FOLDER / f"{name}{s}").is_file()), None)  # fmt: skip
    if path is None:
        return {}, [document.issue(("fragments",), f"no fragment '{name}' in {directory / FRAGMENTS_FOLDER}")]
    fragment = read_yaml(path)
    if fragment.issues:
        return {}, list(fragment.issues)
    if not isinstance(fragment.data, dict):
        return {}, [fragment.issue((), "a fragment must be a mapping of persona fields")]
    return fragment.data, []


def read_spec_file(path: Path, fragments: Sequence[str] = ()) -> tuple[Persona | None, list[FileIssue]]:
    """A persona file with its own ``fragments`` and then ``fragments`` merged on (from ``../fragments``)."""
    document = read_yaml(path)
    if document.issues or not isinstance(document.data, dict):
        return validate_document(document, Persona, "persona file")
    data = dict(document.data)
    names = data.pop("fragments", None) or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None, [document.issue(("fragments",), "must be a list of fragment names")]
    issues = _typos(document)
    for name in [*names, *fragments]:
        fragment, problems = _fragment_data(path.parent.parent, name, document)
        issues.extend(problems)
        data = merge_spec(data, fragment)
    persona, found = validate_document(Document(document.file, data, document.lines), Persona, "persona file")
    issues.extend(found)
    if persona is not None and persona.id != path.stem:
        issues.append(document.issue(("id",), f"is '{persona.id}' but the file is {path.name}"))
    return (persona if not issues else None), issues


def persona_path(directory: Path, agent_id: str) -> Path:
    """Where the persona of ``agent_id`` lives under a propositions directory."""
    return directory / PERSONAS_FOLDER / f"{agent_id}{YAML_SUFFIX}"


def read_persona_file(path: Path) -> tuple[Persona | None, list[FileIssue]]:
    """Validate one persona file; its ``id`` must equal the file name."""
    return read_spec_file(path)


def load_persona_file(path: Path) -> Persona:
    persona, issues = read_persona_file(path)
    if persona is None or issues:
        raise PropositionFileError(issues)
    return persona


def load_persona(directory: Path, agent_id: str) -> Persona | None:
    """The persona of ``agent_id`` from ``directory/personas/``, or None when it has no persona file."""
    require_directory(directory)
    check_agent_id(agent_id, directory)
    path = persona_path(directory, agent_id)
    return load_persona_file(path) if present(path) else None


def persona_files(directory: Path) -> list[Path]:
    folder = directory / PERSONAS_FOLDER
    if not folder.is_dir():
        return []
    return yaml_files(folder, YAML_SUFFIX)


def load_personas(directory: Path) -> dict[str, Persona]:
    """Every persona under ``directory/personas/`` by agent id; raises with the issues of all bad files."""
    require_directory(directory)
    personas: dict[str, Persona] = {}
    issues: list[FileIssue] = []
    for path in persona_files(directory):
        persona, file_issues = read_persona_file(path)
        issues.extend(file_issues)
        if persona is not None:
            personas[persona.id] = persona
    if issues:
        raise PropositionFileError(issues)
    return personas


def load_population(directory: Path, fragments: Sequence[str] = ()) -> dict[str, Persona]:
    """Every persona of a population folder (``<dir>/personas/*.yaml|.yml|.json``), ``fragments`` merged onto
    each from ``<dir>/fragments/``; raises with the issues of every bad file."""
    folder = directory / PERSONAS_FOLDER
    if not folder.is_dir():
        raise PropositionFileError([FileIssue(str(directory), 0, "", f"no {PERSONAS_FOLDER}/ folder of persona files")])
    personas: dict[str, Persona] = {}
    issues: list[FileIssue] = []
    for path in sorted(p for p in folder.iterdir() if p.suffix in SPEC_SUFFIXES and p.is_file()):
        persona, file_issues = read_spec_file(path, fragments)
        issues.extend(file_issues)
        if persona is not None:
            personas[persona.id] = persona
    if issues:
        raise PropositionFileError(issues)
    if not personas:
        raise PropositionFileError([FileIssue(str(folder), 0, "", "the population holds no persona file")])
    return personas


def read_fragment_file(path: Path) -> list[FileIssue]:
    """A fragment is valid when merged onto a minimal persona it gives a valid persona (located issues)."""
    document = read_yaml(path)
    if document.issues or not isinstance(document.data, dict):
        return validate_document(document, Persona, "fragment file")[1]
    data = merge_spec({"id": "fragment", "name": "fragment"}, document.data)
    issues = _typos(document) + validate_document(Document(document.file, data, document.lines), Persona, "fragment")[1]
    return [i for i in issues if i.path not in {"id", "name"}]


def _is_fragment(document: Document) -> bool:
    keys = set(document.data) if isinstance(document.data, dict) else set()
    return bool(keys) and keys <= set(_KNOWN_FIELDS) - {"id", "name"}


FRAGMENT_KIND = FileKind(
    "persona-fragment", "a persona fragment (merged onto personas)", _is_fragment, read_fragment_file
)

PERSONA_KIND = FileKind(
    "persona",
    "a persona specification",
    lambda d: {"id", "name"} <= top_keys(d),
    lambda path: read_persona_file(path)[1],
)

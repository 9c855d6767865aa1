"""Persona specs: ``<propositions dir>/personas/<agent_id>.yaml`` -> :class:`engine.models.Persona`.

A persona file holds ``id`` (equal to the file name), ``name``, ``personality``, ``style`` and the lists
``beliefs``, ``behaviours`` and ``skills``. Problems are raised as :class:`PropositionFileError` with
``FILE:LINE: field: message`` issues, exactly like proposition files.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue, PropositionFileError
from engine.models import Persona
from engine.propositions.issues import validate_document
from engine.propositions.loader import PERSONAS_FOLDER, YAML_SUFFIX, check_agent_id, require_directory
from engine.propositions.yamlsource import present, read_yaml, yaml_files


def persona_path(directory: Path, agent_id: str) -> Path:
    """Where the persona of ``agent_id`` lives under a propositions directory."""
    return directory / PERSONAS_FOLDER / f"{agent_id}{YAML_SUFFIX}"


def read_persona_file(path: Path) -> tuple[Persona | None, list[FileIssue]]:
    """Validate one persona file; its ``id`` must equal the file name."""
    document = read_yaml(path)
    persona, issues = validate_document(document, Persona, "persona file")
    if persona is not None and persona.id != path.stem:
        issues.append(document.issue(("id",), f"is '{persona.id}' but the file is {path.name}"))
        return None, issues
    return persona, issues


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

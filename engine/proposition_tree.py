"""Validating a whole propositions directory: every file, every persona and every agent merge.

Unlike :func:`engine.propositions.loader.load_set`, which stops at the files it needs, this collects every
issue of the tree so ``drift propositions validate`` can list them all at once.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import FileIssue, PropositionFileError
from engine.models import Dimension
from engine.personas import persona_files, read_persona_file
from engine.propositions.loader import (
    PERSONAS_FOLDER,
    YAML_SUFFIX,
    LoadedFile,
    agent_files,
    default_file,
    dimension_folders,
    merge,
    read_file,
)
from engine.propositions.models import ID_PATTERN
from engine.propositions.yamlsource import present, yaml_files

_OTHER_YAML_SUFFIXES = (".yml",)


@dataclass(frozen=True)
class TreeReport:
    """What validating a tree found: files read, propositions defined (before merging) and all issues."""

    files: int = 0
    propositions: int = 0
    issues: tuple[FileIssue, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.issues


def validate_tree(directory: Path) -> list[FileIssue]:
    """Every issue in the tree (files, personas, merges), sorted by file and line; empty when valid."""
    return list(check_tree(directory).issues)


def check_tree(directory: Path) -> TreeReport:
    """Validate everything under ``directory`` without stopping at the first problem."""
    if not directory.is_dir():
        return TreeReport(issues=(FileIssue(str(directory), 0, "", "no such propositions directory"),))
    issues = _layout_issues(directory)
    files, propositions = 0, 0
    for dimension, folder in dimension_folders(directory):
        count, defined, found = _check_dimension(directory, dimension, folder)
        files, propositions = files + count, propositions + defined
        issues.extend(found)
    count, found = _check_personas(directory)
    issues.extend(found)
    ordered = sorted(issues, key=lambda i: (i.file, i.line, i.path, i.message))
    return TreeReport(files + count, propositions, tuple(ordered))


def _layout_issues(directory: Path) -> list[FileIssue]:
    """YAML files outside any dimension folder, misspelt dimension folders, ``.yml`` files."""
    issues: list[FileIssue] = []
    known = [d.value for d in Dimension]
    for entry in sorted(directory.iterdir()):
        if not entry.is_dir() and entry.suffix in (YAML_SUFFIX, *_OTHER_YAML_SUFFIXES):
            message = f"proposition files belong in a dimension folder ({', '.join(known)})"
            issues.append(FileIssue(str(entry), 1, "", message))
        elif entry.is_dir() and entry.name not in (*known, PERSONAS_FOLDER):
            close = difflib.get_close_matches(entry.name, [*known, PERSONAS_FOLDER], n=1, cutoff=0.8)
            if close:
                message = f"unknown folder '{entry.name}'; did you mean '{close[0]}'? (its files are ignored)"
                issues.append(FileIssue(str(entry), 0, "", message))
        if entry.is_dir() and entry.name in (*known, PERSONAS_FOLDER):
            issues.extend(_stray_yml(entry))
    return issues


def _stray_yml(folder: Path) -> list[FileIssue]:
    return [
        FileIssue(str(p), 1, "", f"ignored: rename it to {p.stem}{YAML_SUFFIX}")
        for suffix in _OTHER_YAML_SUFFIXES
        for p in yaml_files(folder, suffix)
    ]


def _check_dimension(directory: Path, dimension: Dimension, folder: Path) -> tuple[int, int, list[FileIssue]]:
    """(files read, propositions defined, issues) for one dimension folder, merges included."""
    files, propositions = 0, 0
    issues: list[FileIssue] = []
    default: LoadedFile | None = None
    default_ok = True
    if present(default_file(directory, dimension)):
        default, found = read_file(default_file(directory, dimension), dimension, None)
        files, default_ok = 1, default is not None and not found
        issues.extend(found)
        propositions += _count(default)
    for path in agent_files(folder):
        files += 1
        if not ID_PATTERN.fullmatch(path.stem):
            issues.append(FileIssue(str(path), 1, "", f"'{path.stem}' is not a valid agent id for a file name"))
            continue
        agent, found = read_file(path, dimension, path.stem)
        issues.extend(found)
        if agent is None:
            continue
        propositions += _count(agent)
        if default_ok and not found:
            issues.extend(_merge_issues(default, agent, dimension))
    return files, propositions, issues


def _count(loaded: LoadedFile | None) -> int:
    return 0 if loaded is None else len(loaded.model.propositions) + len(loaded.model.action)


def _merge_issues(default: LoadedFile | None, agent: LoadedFile, dimension: Dimension) -> list[FileIssue]:
    issues: list[FileIssue] = []
    for action in (False, True):
        try:
            merge(default, agent, dimension, agent.path.stem, action=action)
        except PropositionFileError as exc:
            issues.extend(i for i in exc.issues if i not in issues)
    return issues


def _check_personas(directory: Path) -> tuple[int, list[FileIssue]]:
    issues: list[FileIssue] = []
    paths = persona_files(directory)
    for path in paths:
        issues.extend(read_persona_file(path)[1])
    return len(paths), issues

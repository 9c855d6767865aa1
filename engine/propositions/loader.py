"""Loading proposition files and merging ``_default.yaml`` with an agent's file.

Layout: ``<dir>/<dimension>/_default.yaml`` and ``<dir>/<dimension>/<agent_id>.yaml``. For (agent, dimension)
the default file's settings apply, the agent file's *explicitly set* settings override them, and the agent's
propositions are appended. Every problem is reported as a :class:`FileIssue` inside a
:class:`PropositionFileError`; no other exception escapes for any file content.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import FileIssue, PropositionFileError
from engine.models import Dimension
from engine.propositions.issues import validate_document
from engine.propositions.models import (
    ACTION_SECTION,
    ID_PATTERN,
    SETTING_FIELDS,
    TRAJECTORY_SECTION,
    Proposition,
    PropositionFile,
    PropositionSet,
)
from engine.propositions.yamlsource import Document, present, read_yaml, yaml_files

DEFAULT_STEM = "_default"
YAML_SUFFIX = ".yaml"
PERSONAS_FOLDER = "personas"


@dataclass(frozen=True)
class LoadedFile:
    """A valid proposition file together with the parsed document (for line numbers)."""

    path: Path
    model: PropositionFile
    document: Document

    def proposition_issue(self, index: int, message: str, section: str = TRAJECTORY_SECTION) -> FileIssue:
        return self.document.issue((section, index, "id"), message)

    def where(self, index: int, section: str = TRAJECTORY_SECTION) -> str:
        return f"{self.path}:{self.document.line_of((section, index, 'id'))}"


def load_file(path: Path) -> PropositionFile:
    """Read and validate one proposition file (schema and unique ids; not its place in a tree)."""
    loaded, issues = read_file(path)
    if loaded is None or issues:
        raise PropositionFileError(issues)
    return loaded.model


def read_file(
    path: Path, dimension: Dimension | None = None, agent_id: str | None = None
) -> tuple[LoadedFile | None, list[FileIssue]]:
    """Validate ``path``; with ``dimension`` also check it against its folder and (agent files) its stem."""
    document = read_yaml(path)
    model, issues = validate_document(document, PropositionFile, "proposition file")
    if model is None:
        return None, issues
    loaded = LoadedFile(path, model, document)
    issues.extend(_duplicate_ids([loaded], TRAJECTORY_SECTION) + _duplicate_ids([loaded], ACTION_SECTION))
    if dimension is not None:
        issues.extend(_placement_issues(loaded, dimension, agent_id))
    return loaded, issues


def _placement_issues(loaded: LoadedFile, dimension: Dimension, agent_id: str | None) -> list[FileIssue]:
    issues: list[FileIssue] = []
    model, document = loaded.model, loaded.document
    if model.dimension is not dimension:
        issues.append(
            document.issue(
                ("dimension",),
                f"is '{model.dimension.value}' but the file is in the '{dimension.value}' folder",
            )
        )
    expected = DEFAULT_STEM if agent_id is None else agent_id
    if model.agent_id is not None and model.agent_id != expected:
        where = "_default.yaml may only say '_default'" if agent_id is None else f"the file is {agent_id}.yaml"
        issues.append(document.issue(("agent_id",), f"is '{model.agent_id}' but {where}"))
    return issues


def _duplicate_ids(files: list[LoadedFile], section: str) -> list[FileIssue]:
    """One issue per proposition id repeated within ``section``, at the repeat, naming the first definition."""
    first: dict[str, tuple[LoadedFile, int]] = {}
    issues: list[FileIssue] = []
    for loaded in files:
        for index, proposition in enumerate(loaded.model.section(section)):
            if proposition.id in first:
                other, other_index = first[proposition.id]
                first_at = other.where(other_index, section)
                message = f"duplicate proposition id '{proposition.id}' (first defined at {first_at})"
                issues.append(loaded.proposition_issue(index, message, section))
            else:
                first[proposition.id] = (loaded, index)
    return issues


def merge(
    default: LoadedFile | None,
    agent: LoadedFile | None,
    dimension: Dimension,
    agent_id: str | None,
    *,
    action: bool = False,
) -> PropositionSet:
    """Merge a default and an agent file (either may be absent); raises on ids repeated across them.

    ``action``: the gate's set, from the files' ``action`` sections, or from their ``propositions`` when no
    file has an action section (trees written before sections existed keep gating as they did)."""
    files = [f for f in (default, agent) if f is not None]
    section = ACTION_SECTION if action and any(f.model.action for f in files) else TRAJECTORY_SECTION
    issues = _duplicate_ids(files, section)
    if issues:
        raise PropositionFileError(issues)
    settings: dict[str, Any] = {}
    if default is not None:
        settings = {name: getattr(default.model, name) for name in SETTING_FIELDS}
    if agent is not None:
        settings.update({n: getattr(agent.model, n) for n in SETTING_FIELDS if n in agent.model.model_fields_set})
    propositions: tuple[Proposition, ...] = tuple(p for f in files for p in f.model.section(section))
    return PropositionSet(
        dimension=dimension,
        agent_id=agent_id,
        propositions=propositions,
        sources=tuple(str(f.path) for f in files),
        **settings,
    )


def agent_file(directory: Path, dimension: Dimension, agent_id: str) -> Path:
    return directory / dimension.value / f"{agent_id}{YAML_SUFFIX}"


def default_file(directory: Path, dimension: Dimension) -> Path:
    return directory / dimension.value / f"{DEFAULT_STEM}{YAML_SUFFIX}"


def require_directory(directory: Path) -> None:
    if not directory.is_dir():
        raise PropositionFileError([FileIssue(str(directory), 0, "", "no such propositions directory")])


def check_agent_id(agent_id: str, directory: Path) -> None:
    if not ID_PATTERN.fullmatch(agent_id):
        message = f"{agent_id!r} is not a valid agent id (letters, digits, '_', '-', '.', ':')"
        raise PropositionFileError([FileIssue(str(directory), 0, "agent_id", message)])


FileCache = dict[tuple[Path, Dimension, str | None], tuple[LoadedFile | None, list[FileIssue]]]


def load_set(
    directory: Path,
    dimension: Dimension,
    agent_id: str | None,
    *,
    cache: FileCache | None = None,
    action: bool = False,
) -> PropositionSet:
    """The merged set for ``agent_id`` (None: the defaults only). No files at all -> an empty set.
    ``action``: the gate's action-level set (see :func:`merge`).

    ``cache`` keeps each file's parse for callers that load many sets (the default file of a dimension is
    then parsed once, not once per agent)."""
    require_directory(directory)
    if agent_id is not None:
        check_agent_id(agent_id, directory)
    default, issues = _read_if_exists(default_file(directory, dimension), dimension, None, cache)
    issues = list(issues)
    agent: LoadedFile | None = None
    if agent_id is not None:
        agent, agent_issues = _read_if_exists(agent_file(directory, dimension, agent_id), dimension, agent_id, cache)
        issues.extend(agent_issues)
    if issues:
        raise PropositionFileError(issues)
    return merge(default, agent, dimension, agent_id, action=action)


def _read_if_exists(
    path: Path, dimension: Dimension, agent_id: str | None, cache: FileCache | None = None
) -> tuple[LoadedFile | None, list[FileIssue]]:
    key = (path, dimension, agent_id)
    if cache is not None and key in cache:
        return cache[key]
    found: tuple[LoadedFile | None, list[FileIssue]] = (
        (None, []) if not present(path) else read_file(path, dimension, agent_id)
    )
    if cache is not None:
        cache[key] = found
    return found


def dimension_folders(directory: Path) -> list[tuple[Dimension, Path]]:
    """The existing ``<dir>/<dimension>`` folders, in Dimension order."""
    return [(d, directory / d.value) for d in Dimension if (directory / d.value).is_dir()]


def agent_files(folder: Path) -> list[Path]:
    """The agent files of one dimension folder, sorted by agent id."""
    return [p for p in yaml_files(folder, YAML_SUFFIX) if p.stem != DEFAULT_STEM]


def list_dimensions(directory: Path) -> tuple[Dimension, ...]:
    """The dimensions with at least one proposition file under ``directory``."""
    return tuple(d for d, folder in dimension_folders(directory) if any(folder.glob(f"*{YAML_SUFFIX}")))


def list_agents(directory: Path) -> tuple[str, ...]:
    """Agent ids that have an agent file in any dimension or a persona file, sorted."""
    stems = {p.stem for _, folder in dimension_folders(directory) for p in agent_files(folder)}
    personas = directory / PERSONAS_FOLDER
    if personas.is_dir():
        stems.update(p.stem for p in yaml_files(personas, YAML_SUFFIX))
    return tuple(sorted(stems))

"""The AgentV eval file as a :class:`~engine.formats.registry.FileKind` (``drift validate``).

A YAML file with a case list is an eval file. A YAML file without one that sits beside a ``.jsonl`` of the same
name is that dataset's *sidecar* (its defaults, :mod:`engine.formats.agentv.jsonl`) and is validated as one: only
the problems located in the sidecar itself are reported (the dataset's own lines are the ``.jsonl``'s business).
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import FileIssue
from engine.formats.agentv.jsonl import check_sidecar, dataset_of
from engine.formats.agentv.loader import SEED_LISTS, load_eval_file
from engine.formats.registry import FileKind, top_keys
from engine.propositions.yamlsource import Document, read_yaml

CASE_LISTS = frozenset({*SEED_LISTS, "tests"})


def is_sidecar(document: Document) -> bool:
    """A YAML mapping with no case list beside a ``.jsonl`` dataset of the same name."""
    return not (top_keys(document) & CASE_LISTS) and dataset_of(Path(document.file)) is not None


def _validate(path: Path) -> list[FileIssue]:
    document = read_yaml(path)
    if not document.issues and is_sidecar(document):
        return check_sidecar(document)[1]
    return load_eval_file(path)[1]


KIND = FileKind(
    "agentv",
    "an AgentV eval file (evalcases / eval_cases, or 4.x tests), or the sidecar YAML of a .jsonl dataset",
    lambda d: bool(top_keys(d) & CASE_LISTS) or is_sidecar(d),
    _validate,
)

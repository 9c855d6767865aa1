"""The AgentV eval file and the sidecar of a JSONL dataset, each a :class:`~engine.formats.registry.FileKind`
(``drift validate``).

A YAML file with a case list is an eval file (kind ``agentv``). A YAML file without one that sits beside a
``.jsonl`` of the same name is that dataset's *sidecar* (kind ``agentv-sidecar``: its defaults,
:mod:`engine.formats.agentv.jsonl`), validated as one: only the problems located in the sidecar itself are
reported (the dataset's own lines are the ``.jsonl``'s business). The sidecar kind is tried last, so a file of
another kind that happens to sit beside a ``.jsonl`` keeps its kind.
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
    return load_eval_file(path)[1]


def _validate_sidecar(path: Path) -> list[FileIssue]:
    document = read_yaml(path)
    return list(document.issues) or check_sidecar(document)[1]


KIND = FileKind(
    "agentv",
    "an AgentV eval file (evalcases / eval_cases, or 4.x tests)",
    lambda d: bool(top_keys(d) & CASE_LISTS),
    _validate,
)
SIDECAR_KIND = FileKind(
    "agentv-sidecar",
    "the sidecar YAML of an AgentV .jsonl dataset (its defaults)",
    is_sidecar,
    _validate_sidecar,
)

"""Data that sits beside the repository, never in it: the upstream format corpora and the paper's raw files.

Tests read them in place (README, "Set up") and skip, naming the folder they looked in, when they are absent, so
the suite passes on a clone anywhere. Looked up, in order: ``$PERSONA_DRIFT_SHARED``, the ``shared`` folder beside
the clone, and ``/work/shared`` (the development machine's copy). Every test and benchmark that reaches outside
the repository does it through this module (tests/test_repository_data.py checks that).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _candidates() -> list[Path]:
    named = os.environ.get("PERSONA_DRIFT_SHARED")
    found = [Path(named)] if named else []
    return [*found, REPO.parent / "shared", Path("/work/shared")]


def shared_dir() -> Path:
    """The first folder that exists among the candidates (the sibling one when none does, for the messages)."""
    for folder in _candidates():
        if folder.is_dir():
            return folder
    return REPO.parent / "shared"


def peer(*parts: str) -> Path:
    """A path inside the shared folder; it may not exist (see :func:`require` and :func:`skip_unless`)."""
    return shared_dir().joinpath(*parts)


def _reason(path: Path) -> str:
    looked = ", ".join(str(folder) for folder in _candidates())
    return f"optional peer data not found: {path} (looked for the shared folder in {looked})"


def require(path: Path) -> Path:
    """``path`` when it exists; otherwise the calling test is skipped with the place it looked in."""
    if not path.exists():
        pytest.skip(_reason(path))
    return path


def skip_unless(path: Path) -> pytest.MarkDecorator:
    """A marker that skips a test (or a module, as ``pytestmark``) when ``path`` is absent."""
    return pytest.mark.skipif(not path.exists(), reason=_reason(path))

"""Factories shared by the proposition loader tests: a YAML file writer, a default file, issue extractors."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import FileIssue, PropositionFileError

Write = Callable[[str, str], Path]

DEFAULT_ADHERENCE = """\
    dimension: adherence
    include_personas: true
    hard: false
    first_n: 3
    propositions:
      - id: base-one
        claim: "{{agent_name}} acts like their persona"
        weight: 0.5
      - id: base-two
        claim: "{{agent_name}} sounds like an assistant"
        inverted: true
    """


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Factory: write dedented YAML text to ``tmp_path/<relative>`` and return the path."""

    def _write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return _write


def issues_of(call: Callable[[], object]) -> tuple[FileIssue, ...]:
    with pytest.raises(PropositionFileError) as caught:
        call()
    return caught.value.issues


def only_issue(call: Callable[[], object]) -> FileIssue:
    issues = issues_of(call)
    assert len(issues) == 1, issues
    return issues[0]

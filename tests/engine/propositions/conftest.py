"""Factories shared by the proposition loader tests: a YAML file writer, a default file, issue extractors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.errors import FileIssue, PropositionFileError

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


def issues_of(call: Callable[[], object]) -> tuple[FileIssue, ...]:
    with pytest.raises(PropositionFileError) as caught:
        call()
    return caught.value.issues


def only_issue(call: Callable[[], object]) -> FileIssue:
    issues = issues_of(call)
    assert len(issues) == 1, issues
    return issues[0]

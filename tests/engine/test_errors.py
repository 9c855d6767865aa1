"""The exception tree: FILE:LINE issue formatting and the classes callers catch."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.errors import (
    CassetteMiss,
    ConfigurationError,
    DriftError,
    FileIssue,
    JudgeError,
    JudgeOutputError,
    JudgeTimeout,
    PayloadError,
    PropositionFileError,
    ReplyTimeout,
    ServiceError,
)

IssueFactory = Callable[..., FileIssue]


@pytest.fixture
def make_issue() -> IssueFactory:
    """make_issue(line, path, message, file=...)."""

    def make(
        line: int = 3, path: str = "propositions[0].weight", message: str = "must be >= 0", **kw: str
    ) -> FileIssue:
        return FileIssue(kw.get("file", "adherence/michael.yaml"), line, path, message)

    return make


def test_an_issue_reads_file_line_path_message(make_issue: IssueFactory) -> None:
    assert str(make_issue()) == "adherence/michael.yaml:3: propositions[0].weight: must be >= 0"


def test_an_issue_without_a_path_leaves_it_out(make_issue: IssueFactory) -> None:
    assert str(make_issue(1, "", "invalid YAML: bad indent")) == "adherence/michael.yaml:1: invalid YAML: bad indent"


def test_a_file_error_joins_its_issues_one_per_line(make_issue: IssueFactory) -> None:
    issues = [make_issue(), make_issue(7, "", "unknown key 'wieght'", file="fluency/_default.yaml")]
    error = PropositionFileError(issues)
    assert str(error).splitlines() == [str(issues[0]), str(issues[1])]
    assert error.issues == tuple(issues)
    issues.clear()  # the error keeps its own copy
    assert len(error.issues) == 2


def test_a_file_error_is_a_configuration_error(make_issue: IssueFactory) -> None:
    with pytest.raises(ConfigurationError):
        raise PropositionFileError([make_issue()])


def test_issues_are_immutable_values(make_issue: IssueFactory) -> None:
    issue = make_issue()
    assert issue == make_issue() and hash(issue) == hash(make_issue())
    with pytest.raises(AttributeError):
        issue.line = 4  # type: ignore[misc]


def test_a_cassette_miss_names_the_fingerprint_and_the_cassette() -> None:
    error = CassetteMiss("abc123", "cassettes/run.jsonl")
    assert error.fingerprint == "abc123"
    assert "abc123" in str(error) and "cassettes/run.jsonl" in str(error)


@pytest.mark.parametrize(
    ("error", "parent"),
    [
        (ConfigurationError, DriftError),
        (JudgeError, DriftError),
        (JudgeTimeout, JudgeError),
        (JudgeOutputError, JudgeError),
        (CassetteMiss, JudgeError),
        (PayloadError, DriftError),
        (ServiceError, DriftError),
        (ReplyTimeout, ServiceError),
    ],
)
def test_the_tree(error: type[Exception], parent: type[Exception]) -> None:
    assert issubclass(error, parent)


def test_judge_errors_are_not_configuration_errors() -> None:
    # the gate fails open on JudgeError; a configuration mistake must not be swallowed the same way
    assert not issubclass(JudgeTimeout, ConfigurationError)
    assert not issubclass(ConfigurationError, JudgeError)

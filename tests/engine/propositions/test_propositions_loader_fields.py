"""Proposition file errors in keys and values, each at its exact FILE:LINE: path."""

from __future__ import annotations

from engine.propositions import load_file
from tests.conftest import Write
from tests.engine.propositions.conftest import issues_of, only_issue

# --- errors: exact locations ----------------------------------------------------------------------------------


def test_unknown_key_suggests_the_closest(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: adherence
        propositions:
          - id: a
            claim: c
            wieght: 0.5
        """,
    )
    issue = only_issue(lambda: load_file(path))
    assert (issue.file, issue.line, issue.path) == (str(path), 5, "propositions.0.wieght")
    assert issue.message == "unknown key 'wieght'; did you mean 'weight'?"


def test_unknown_top_level_key_suggests_the_closest(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\ninclude_persona: false\n")
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (2, "include_persona")
    assert "did you mean 'include_personas'?" in issue.message


def test_unknown_key_without_a_close_match_lists_the_allowed_keys(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\nzzz: 1\n")
    issue = only_issue(lambda: load_file(path))
    assert "allowed keys:" in issue.message and "target_type" in issue.message


def test_missing_required_key_points_at_the_parent_mapping(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: consistency
        propositions:
          - id: fine
            claim: ok
          - id: no-claim
            weight: 1
        """,
    )
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (5, "propositions.1.claim")
    assert issue.message == "required key is missing"


def test_wrong_types_are_reported_with_what_was_given(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: fluency
        hard: "yes"
        first_n: 2.5
        propositions:
          - id: a
            claim: c
            weight: heavy
        """,
    )
    issues = issues_of(lambda: load_file(path))
    by_path = {i.path: i for i in issues}
    assert set(by_path) == {"hard", "first_n", "propositions.0.weight"}
    assert by_path["hard"].line == 2 and "boolean" in by_path["hard"].message
    assert by_path["first_n"].line == 3 and "integer" in by_path["first_n"].message
    assert by_path["propositions.0.weight"].line == 7
    assert "got string 'heavy'" in by_path["propositions.0.weight"].message


def test_negative_weight_and_window_are_rejected(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: fluency
        last_n: -1
        propositions:
          - {id: a, claim: c, weight: -0.5}
        """,
    )
    issues = issues_of(lambda: load_file(path))
    assert {(i.line, i.path) for i in issues} == {(2, "last_n"), (4, "propositions.0.weight")}
    assert all("greater than or equal to 0" in i.message for i in issues)


def test_empty_or_blank_claim_is_rejected(write: Write) -> None:
    path = write("f.yaml", "dimension: fluency\npropositions:\n  - id: a\n    claim: '   '\n")
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path, issue.message) == (
        4,
        "propositions.0.claim",
        "the claim must not be empty",
    )


def test_unknown_dimension_suggests_the_closest(write: Write) -> None:
    path = write("f.yaml", "\ndimension: adherance\n")
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (2, "dimension")
    assert "did you mean 'adherence'?" in issue.message


def test_unknown_precondition_suggests_the_registered_name(write: Write) -> None:
    path = write(
        "f.yaml",
        "dimension: consistency\npropositions:\n  - id: a\n    claim: c\n    precondition: has_prior_action\n",
    )
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (5, "propositions.0.precondition")
    assert issue.message == "unknown precondition 'has_prior_action'; did you mean 'has_prior_actions'?"


def test_invalid_proposition_id_is_rejected(write: Write) -> None:
    path = write("f.yaml", "dimension: fluency\npropositions:\n  - id: 'has space'\n    claim: c\n")
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (3, "propositions.0.id")
    assert "not a valid id" in issue.message

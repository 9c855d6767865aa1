"""Loading and merging proposition files, and the exact FILE:LINE: path of every kind of error."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import FileIssue, PropositionFileError
from engine.models import Dimension, TargetType
from engine.propositions import (
    ACTION_LEVEL_WINDOW_DEFAULTS,
    EVALUATION_WINDOW_DEFAULTS,
    PropositionFile,
    Window,
    list_agents,
    list_dimensions,
    load_file,
    load_set,
)

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


# --- happy path and merge semantics -------------------------------------------------------------------------


def test_load_file_reads_every_key_and_applies_defaults(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: fluency
        propositions:
          - id: p1
            claim: varied
          - id: p2
            claim: repeats
            weight: 2
            inverted: true
            double_check: true
            recommendations_for_improvement: vary it
            precondition: has_prior_actions
        """,
    )
    loaded = load_file(path)
    assert isinstance(loaded, PropositionFile)
    assert (loaded.include_personas, loaded.hard, loaded.target_type) == (True, False, TargetType.AGENT)
    assert loaded.first_n is None and loaded.last_n is None
    first, second = loaded.propositions
    assert (first.weight, first.inverted, first.double_check, first.precondition) == (1.0, False, False, None)
    assert second.weight == 2.0 and isinstance(second.weight, float)
    assert (second.inverted, second.double_check) == (True, True)
    assert second.recommendations_for_improvement == "vary it"
    assert second.precondition == "has_prior_actions"


def test_agent_settings_override_only_what_they_set(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write(
        "adherence/dwight.yaml",
        """\
        dimension: adherence
        agent_id: dwight
        hard: true
        last_n: 7
        propositions:
          - id: dwight-authority
            claim: "{{agent_name}} asserts authority"
        """,
    )
    merged = load_set(tmp_path, Dimension.ADHERENCE, "dwight")
    assert merged.hard is True  # overridden
    assert merged.first_n == 3  # kept from _default.yaml
    assert merged.last_n == 7  # set only by the agent
    assert merged.include_personas is True
    assert [p.id for p in merged.propositions] == ["base-one", "base-two", "dwight-authority"]
    assert merged.sources == (
        str(tmp_path / "adherence/_default.yaml"),
        str(tmp_path / "adherence/dwight.yaml"),
    )
    assert merged.agent_id == "dwight" and merged.dimension is Dimension.ADHERENCE


def test_agent_can_reset_a_default_setting_explicitly(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/pam.yaml", "dimension: adherence\nfirst_n: null\ninclude_personas: false\n")
    merged = load_set(tmp_path, Dimension.ADHERENCE, "pam")
    assert merged.first_n is None
    assert merged.include_personas is False
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == EVALUATION_WINDOW_DEFAULTS


def test_agent_without_file_gets_the_defaults(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    merged = load_set(tmp_path, Dimension.ADHERENCE, "creed")
    assert [p.id for p in merged.propositions] == ["base-one", "base-two"]
    assert merged.sources == (str(tmp_path / "adherence/_default.yaml"),)
    assert merged.agent_id == "creed"


def test_agent_file_without_default_uses_setting_defaults(write: Write, tmp_path: Path) -> None:
    write("suitability/jim.yaml", "dimension: suitability\npropositions:\n  - {id: a, claim: fits}\n")
    merged = load_set(tmp_path, Dimension.SUITABILITY, "jim")
    assert [p.id for p in merged.propositions] == ["a"]
    assert (merged.include_personas, merged.hard, merged.target_type) == (True, False, TargetType.AGENT)


def test_no_files_at_all_is_an_empty_set(tmp_path: Path) -> None:
    merged = load_set(tmp_path, Dimension.CONVERGENCE, "michael")
    assert merged.is_empty and merged.sources == ()


def test_defaults_only_when_agent_is_none(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/dwight.yaml", "dimension: adherence\nhard: true\n")
    merged = load_set(tmp_path, Dimension.ADHERENCE, None)
    assert merged.agent_id is None and merged.hard is False


def test_window_fills_only_unset_sizes(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    merged = load_set(tmp_path, Dimension.ADHERENCE, None)
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == Window(first_n=3, last_n=100)
    assert merged.window(ACTION_LEVEL_WINDOW_DEFAULTS) == Window(first_n=3, last_n=10)


def test_window_keeps_an_explicit_zero(write: Write, tmp_path: Path) -> None:
    write("fluency/_default.yaml", "dimension: fluency\nfirst_n: 0\nlast_n: 0\n")
    merged = load_set(tmp_path, Dimension.FLUENCY, None)
    assert merged.window(EVALUATION_WINDOW_DEFAULTS) == Window(first_n=0, last_n=0)


def test_listing_helpers(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    write("adherence/dwight.yaml", "dimension: adherence\n")
    write("fluency/kevin.yaml", "dimension: fluency\n")
    write("personas/pam.yaml", "id: pam\nname: Pam Beesly\n")
    (tmp_path / "consistency").mkdir()  # empty folder: not listed
    assert list_agents(tmp_path) == ("dwight", "kevin", "pam")
    assert list_dimensions(tmp_path) == (Dimension.ADHERENCE, Dimension.FLUENCY)


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


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("dimension: adherence\npropositions: [\n", 3, "YAML syntax error"),
        ("dimension: adherence\n\tfirst_n: 3\n", 2, "YAML syntax error"),
        ("- just\n- a list\n", 1, "top level must be a mapping"),
        ("plain text\n", 1, "top level must be a mapping"),
        ("", 1, "is empty"),
        ("# only a comment\n", 1, "is empty"),
        ("dimension: adherence\n---\ndimension: fluency\n", 2, "YAML syntax error"),
    ],
)
def test_document_level_problems(write: Write, text: str, line: int, fragment: str) -> None:
    path = write("f.yaml", text)
    issue = only_issue(lambda: load_file(path))
    assert issue.line == line and issue.path == ""
    assert fragment in issue.message


def test_duplicate_key_names_the_first_line(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\nhard: true\nhard: false\n")
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (3, "hard")
    assert issue.message == "duplicate key 'hard' (first set on line 2)"


def test_non_string_key_is_rejected(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\n1: one\n")
    issue = only_issue(lambda: load_file(path))
    assert issue.line == 2 and "must be a string" in issue.message


def test_non_utf8_file_is_an_issue(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"dimension: adherence\nagent_id: \xff\xfe\n")
    issue = only_issue(lambda: load_file(path))
    assert issue.line == 2 and "UTF-8" in issue.message


def test_recursive_alias_is_an_issue_not_a_crash(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\npropositions: &loop\n  - *loop\n")
    issues = issues_of(lambda: load_file(path))
    assert any("recursive alias" in i.message and i.line == 2 for i in issues)  # the anchor


def test_merge_keys_share_settings_without_false_duplicates(write: Write) -> None:
    path = write(
        "f.yaml",
        """\
        dimension: adherence
        propositions:
          - &base {id: a, claim: first, weight: 0.5}
          - <<: *base
            id: b
        """,
    )
    loaded = load_file(path)
    assert [(p.id, p.claim, p.weight) for p in loaded.propositions] == [
        ("a", "first", 0.5),
        ("b", "first", 0.5),
    ]


def test_duplicate_id_within_one_file(write: Write) -> None:
    path = write(
        "f.yaml",
        "dimension: fluency\npropositions:\n  - id: a\n    claim: c\n  - id: a\n    claim: d\n",
    )
    issue = only_issue(lambda: load_file(path))
    assert (issue.line, issue.path) == (5, "propositions.1.id")
    assert issue.message == f"duplicate proposition id 'a' (first defined at {path}:3)"


def test_duplicate_id_across_default_and_agent_names_both_files(write: Write, tmp_path: Path) -> None:
    default = write("adherence/_default.yaml", DEFAULT_ADHERENCE)
    agent = write(
        "adherence/michael.yaml",
        "dimension: adherence\npropositions:\n  - id: own\n    claim: c\n  - id: base-two\n    claim: again\n",
    )
    issue = only_issue(lambda: load_set(tmp_path, Dimension.ADHERENCE, "michael"))
    assert (issue.file, issue.line, issue.path) == (str(agent), 5, "propositions.1.id")
    assert f"{default}:9" in issue.message


def test_dimension_must_match_its_folder(write: Write, tmp_path: Path) -> None:
    path = write("fluency/_default.yaml", "propositions: []\ndimension: adherence\n")
    issue = only_issue(lambda: load_set(tmp_path, Dimension.FLUENCY, None))
    assert (issue.file, issue.line, issue.path) == (str(path), 2, "dimension")
    assert "'fluency' folder" in issue.message


def test_agent_id_must_match_the_file_stem(write: Write, tmp_path: Path) -> None:
    path = write("adherence/jim.yaml", "dimension: adherence\nagent_id: pam\n")
    issue = only_issue(lambda: load_set(tmp_path, Dimension.ADHERENCE, "jim"))
    assert (issue.file, issue.line, issue.path) == (str(path), 2, "agent_id")
    assert issue.message == "is 'pam' but the file is jim.yaml"


def test_default_file_may_name_itself_default_only(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", "dimension: adherence\nagent_id: _default\n")
    assert load_set(tmp_path, Dimension.ADHERENCE, None).is_empty
    write("adherence/_default.yaml", "dimension: adherence\nagent_id: michael\n")
    issue = only_issue(lambda: load_set(tmp_path, Dimension.ADHERENCE, None))
    assert issue.path == "agent_id" and "_default" in issue.message


def test_errors_in_both_files_are_reported_together(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", "dimension: adherence\nhardd: true\n")
    write("adherence/oscar.yaml", "dimension: adherence\nfirst_n: many\n")
    issues = issues_of(lambda: load_set(tmp_path, Dimension.ADHERENCE, "oscar"))
    assert sorted(i.path for i in issues) == ["first_n", "hardd"]


def test_missing_directory_and_bad_agent_id_are_typed_errors(tmp_path: Path) -> None:
    issue = only_issue(lambda: load_set(tmp_path / "nowhere", Dimension.ADHERENCE, None))
    assert "no such propositions directory" in issue.message
    issue = only_issue(lambda: load_set(tmp_path, Dimension.ADHERENCE, "../etc/passwd"))
    assert issue.path == "agent_id" and "not a valid agent id" in issue.message


def test_issue_renders_as_file_line_path_message(write: Write) -> None:
    path = write("f.yaml", "dimension: adherence\nhard: 3\n")
    with pytest.raises(PropositionFileError) as caught:
        load_file(path)
    assert str(caught.value).startswith(f"{path}:2: hard: input should be a valid boolean")

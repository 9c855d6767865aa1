"""Proposition file errors of whole documents and across files (YAML, duplicates, folders), at exact locations."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import PropositionFileError
from engine.models import Dimension
from engine.propositions import load_file, load_set
from tests.conftest import Write
from tests.engine.propositions.conftest import DEFAULT_ADHERENCE, issues_of, only_issue

# --- errors: whole documents and across files -------------------------------------------------------------------


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

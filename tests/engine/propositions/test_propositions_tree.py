"""validate_tree / check_tree: every file, persona and merge of a directory, all issues at once."""

from __future__ import annotations

from pathlib import Path

from engine.proposition_tree import check_tree, validate_tree
from tests.conftest import Write


def proposition_file(dimension: str, *ids: str) -> str:
    items = "".join(f"  - id: {i}\n    claim: claim {i}\n" for i in ids)
    return f"dimension: {dimension}\npropositions:\n{items}"


def test_valid_tree_counts_files_and_propositions(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", proposition_file("adherence", "a", "b"))
    write("adherence/jim.yaml", proposition_file("adherence", "jim-1"))
    write("fluency/_default.yaml", proposition_file("fluency", "f"))
    write("personas/jim.yaml", "id: jim\nname: Jim Halpert\n")
    write("README.md", "not yaml, ignored\n")
    report = check_tree(tmp_path)
    assert report.ok and report.issues == ()
    assert (report.files, report.propositions) == (4, 4)


def test_all_issues_of_all_files_are_collected_and_sorted(write: Write, tmp_path: Path) -> None:
    bad_default = write("adherence/_default.yaml", "dimension: adherence\nhardd: true\n")
    bad_agent = write("fluency/pam.yaml", "dimension: fluency\nagent_id: jim\n")
    # free-form persona keys are allowed; one a typo away from a known field is not
    bad_persona = write("personas/kevin.yaml", "id: kevin\nname: Kevin\nskils: [chili]\n")
    issues = validate_tree(tmp_path)
    assert [(i.file, i.line, i.path) for i in issues] == [
        (str(bad_default), 2, "hardd"),
        (str(bad_agent), 2, "agent_id"),
        (str(bad_persona), 3, "skils"),
    ]


def test_duplicate_ids_across_a_merge_are_found(write: Write, tmp_path: Path) -> None:
    default = write("consistency/_default.yaml", proposition_file("consistency", "same", "other"))
    agent = write("consistency/dwight.yaml", proposition_file("consistency", "mine", "same"))
    (issue,) = validate_tree(tmp_path)
    assert (issue.file, issue.line, issue.path) == (str(agent), 5, "propositions.1.id")
    assert f"first defined at {default}:3" in issue.message


def test_agent_files_are_still_checked_when_the_default_is_broken(write: Write, tmp_path: Path) -> None:
    write("adherence/_default.yaml", "dimension: [\n")
    write("adherence/angela.yaml", "dimension: adherence\nlast_n: -3\n")
    paths = sorted((Path(i.file).name, i.path) for i in validate_tree(tmp_path))
    assert paths == [("_default.yaml", ""), ("angela.yaml", "last_n")]


def test_layout_problems(write: Write, tmp_path: Path) -> None:
    write("stray.yaml", proposition_file("adherence", "x"))
    write("adherance/_default.yaml", proposition_file("adherence", "x"))
    write("fluency/oscar.yml", proposition_file("fluency", "x"))
    write("fluency/bad name.yaml", proposition_file("fluency", "x"))
    write("interventions/anti_convergence.yaml", "anything: goes\n")  # unrelated folder: not ours to judge
    messages = {Path(i.file).name: i.message for i in validate_tree(tmp_path)}
    assert "dimension folder" in messages["stray.yaml"]
    assert "did you mean 'adherence'?" in messages["adherance"]
    assert "rename it to oscar.yaml" in messages["oscar.yml"]
    assert "not a valid agent id" in messages["bad name.yaml"]
    assert set(messages) == {"stray.yaml", "adherance", "oscar.yml", "bad name.yaml"}


def test_missing_directory_is_one_issue(tmp_path: Path) -> None:
    (issue,) = validate_tree(tmp_path / "absent")
    assert issue.message == "no such propositions directory"

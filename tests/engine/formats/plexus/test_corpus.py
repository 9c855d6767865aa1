"""The upstream Plexus corpus (../shared/corpus/plexus): valid files load, invalid ones are rejected with a
location, fragments are "not a runnable score (no graph)", and the linter oracle's counts hold."""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.formats.plexus.loader import NOT_RUNNABLE, inspect
from tests.peers import peer, skip_unless

CORPUS = peer("corpus", "plexus")
pytestmark = skip_unless(CORPUS)

#: valid/ files that are full score configurations upstream runs (the rest of valid/ are linter fixtures)
RUNNABLE = {
    "Agent Misrepresentation.yaml": ("score", 1),
    "test_scorecard_complex.yaml": ("scorecard", 7),
    "test_scorecard_linear.yaml": ("scorecard", 4),
    "test_score_editor_toolset__VALID_TWO_STAGE_EXTRACTOR_YAML.yaml": ("score", 1),
}


def _files(folder: str) -> list[Path]:
    return sorted((CORPUS / folder).rglob("*.yaml"))


def test_runnable_valid_files_load_as_runnable_scores_or_scorecards() -> None:
    seen = {}
    for path in _files("valid"):
        if path.name in RUNNABLE:
            report = inspect(path)
            assert report.runnable, (path.name, report.errors, report.not_runnable)
            assert report.scorecard is not None
            seen[path.name] = (report.kind, len(report.scorecard.all_scores()))
    assert seen == RUNNABLE


def test_every_valid_file_has_no_error() -> None:
    reports = {path.name: inspect(path) for path in _files("valid")}
    assert len(reports) == 15
    assert {name: r.errors for name, r in reports.items() if r.errors} == {}
    # the legacy sections scorecard loads, but its class: Score entry has no graph to run
    legacy = reports["test_scorecard.yaml"]
    assert legacy.kind == "scorecard" and legacy.not_runnable == f"{NOT_RUNNABLE}: TestScore"


def test_every_invalid_file_is_rejected_with_file_line_and_field() -> None:
    files = _files("invalid")
    assert len(files) == 13
    for path in files:
        report = inspect(path)
        assert report.errors, path.name
        for issue in report.errors:
            assert issue.file == str(path) and issue.line >= 1
            assert str(issue).startswith(f"{path}:{issue.line}: ")


def test_the_pseudo_extractor_is_rejected_with_the_extractor_hint() -> None:
    path = CORPUS / "invalid" / "tests" / "test_score_editor_toolset__INVALID_PSEUDO_EXTRACTOR_YAML.yaml"
    [issue] = inspect(path).errors
    assert (issue.line, issue.path) == (9, "graph.0.valid_classes")
    assert "use class: Extractor" in issue.message


def test_fragments_are_valid_but_not_runnable() -> None:
    files = _files("fragments")
    assert len(files) == 8
    for path in files:
        report = inspect(path)
        assert (report.kind, report.errors, report.not_runnable) == ("fragment", (), NOT_RUNNABLE), path.name


def _oracle_cases() -> list[tuple[str, int, dict[str, object]]]:
    oracle = yaml.safe_load((CORPUS / "oracle" / "yaml-linter-test-cases.yaml").read_text())
    cases: list[tuple[str, int, dict[str, object]]] = []
    for group, entries in oracle.items():
        if isinstance(entries, list):
            cases.extend((group, index, entry) for index, entry in enumerate(entries))
    return cases


def test_linter_oracle_validity_and_counts() -> None:
    cases = _oracle_cases()
    assert len(cases) == 20
    checked = 0
    for group, index, case in cases:
        matches = list(CORPUS.glob(f"*/linter/{group}__{index:02d}_*.yaml"))
        assert len(matches) == 1, (group, index)
        report = inspect(matches[0])
        expected = case["expected"]
        assert isinstance(expected, dict)
        got = (report.ok, len(report.errors), len(report.warnings))
        assert got == (expected["is_valid"], expected["error_count"], expected["warning_count"]), matches[0].name
        checked += 1
    assert checked == 20

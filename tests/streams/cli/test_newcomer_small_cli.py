"""Issue 29, finding 7: the small things a newcomer meets, each through the command that showed it (no stack)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from typer.testing import CliRunner

from engine.errors import DriftError, FileIssue
from engine.models import Outcome
from streams.cli import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[3]


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, BaseException | None]:
    done = runner.invoke(app, list(args), env={"ANTHROPIC_API_KEY": "", "DRIFT_ACTOR": "", **(env or {})})
    return done.exit_code, done.output, done.exception


def test_chart_links_are_relative_to_the_report_not_to_the_current_directory(tmp_path: Path) -> None:
    from engine.experiments.analysis import analyse
    from engine.experiments.raw import load_raw
    from engine.experiments.render import markdown

    raw = tmp_path / "results.json"
    arms = {arm: {"results": {"fluency": [5, 6, 7, 6, 5, 7]}} for arm in ("Control", "Treatment")}
    raw.write_text(json.dumps({"experiments": arms}), encoding="utf-8")
    report = analyse(load_raw(raw))
    chart = tmp_path / "t1" / "charts" / "results-fluency.png"  # --output t1/table1.md --charts t1/charts
    text = markdown([report], {report.name: [chart]}, links_from=tmp_path / "t1")
    assert re.findall(r"!\[[^]]*\]\(([^)]+)\)", text) == ["charts/results-fluency.png"]


def test_simulate_prints_outcome_counts_by_name_not_as_enum_reprs() -> None:
    from rich.console import Console

    from streams.cli.simulate import _summary

    outcomes = Counter({Outcome.PASSED: 2, Outcome.PASSED_AFTER_RETRY: 1})
    agent = SimpleNamespace(actions=3, retries=1, silences=0, outcomes=outcomes)
    result = SimpleNamespace(agents={"a": agent}, directives=Counter({"variety": 1}), error=None, steps=2, key="s1",
                             extracted=None, run_id="r", arm="treatment", theme="t", wall_s=1.0,
                             judges={"j"})  # fmt: skip
    sim = SimpleNamespace(scenario=SimpleNamespace(name="sc"), actor=SimpleNamespace(name="scripted"))
    console = Console(record=True, width=200)
    _summary(console, [result], sim, as_json=False)  # type: ignore[arg-type,list-item]
    text = console.export_text()
    assert "outcomes: passed 2, passed_after_retry 1 · directives: variety 1" in text
    assert "<Outcome" not in text


def test_an_unknown_scenario_or_profile_is_named_with_the_bundled_ones_not_as_a_file_line_zero() -> None:
    _, _, error = invoke("simulate", "--scenario", "brainstorming-averag")
    assert isinstance(error, DriftError)
    assert str(error).startswith("no such scenario 'brainstorming-averag'; did you mean 'brainstorming-average'?")
    _, _, error = invoke("population", "generate", "--profile", "nosuch", "--n", "2", "--out", "unused")
    assert isinstance(error, DriftError) and ":0:" not in str(error) and "average-customers" in str(error)
    assert str(FileIssue("some/dir", 0, "", "no personas/ folder")) == "some/dir: no personas/ folder"


@pytest.fixture
def broken_cast(tmp_path: Path) -> Path:
    """A ``drift init`` tree whose agent proposition file has one bad weight (referenced by the interventions)."""
    cast = tmp_path / "cast"
    assert invoke("init", str(cast))[0] == 0
    own = cast / "adherence" / "alex.yaml"
    own.write_text(own.read_text(encoding="utf-8").replace("weight: 1.0", "weight: lots"), encoding="utf-8")
    return cast


def test_validate_reports_an_error_once_and_lists_every_valid_file(broken_cast: Path) -> None:
    code, output, _ = invoke("validate", str(broken_cast))
    assert code == 2
    assert output.count("alex.yaml:8: propositions.0.weight") == 1, output
    assert "ok  interventions  " in output and "examples.yaml" in output
    assert output.count("ok  ") == len(list(broken_cast.rglob("*.yaml"))) - 1


def test_propositions_validate_counts_each_problem_once(broken_cast: Path) -> None:
    code, output, _ = invoke("propositions", "validate", str(broken_cast))
    assert code == 2
    assert output.count("alex.yaml:8:") == 1 and "1 problem(s) in" in output, output


def test_validate_says_a_jsonl_file_is_not_yaml_rather_than_a_yaml_syntax_error() -> None:
    code, output, _ = invoke("validate", str(REPO / "ops" / "examples" / "office_conversation.jsonl"))
    assert code == 2
    assert "a JSON Lines file, not YAML" in output and "YAML syntax error" not in output


def test_validate_usage_errors_go_through_the_one_error_path(tmp_path: Path) -> None:
    _, _, error = invoke("validate", str(tmp_path / "missing.yaml"))
    assert isinstance(error, DriftError) and str(error) == f"no such file: {tmp_path / 'missing.yaml'}"
    _, _, error = invoke("validate", str(tmp_path))
    assert isinstance(error, DriftError) and str(error) == "no YAML files found"


def test_plexus_without_a_key_names_its_own_flag() -> None:
    scorecard = REPO / "ops" / "examples" / "plexus" / "persona_drift.yaml"
    _, _, error = invoke("plexus", "predict", str(scorecard), "--text", "hi", "--model", "anthropic")
    assert isinstance(error, DriftError) and "--model scripted:RULES.yaml" in str(error) and "--actor" not in str(error)


def test_every_command_group_and_command_has_help_text() -> None:
    root = typer.main.get_command(app)
    missing = []
    for name, command in getattr(root, "commands", {}).items():
        if not (command.help or command.short_help):
            missing.append(name)
        for sub_name, sub in getattr(command, "commands", {}).items():
            if not (sub.help or sub.short_help):
                missing.append(f"{name} {sub_name}")
    assert missing == []


def test_check_says_when_every_check_is_off_and_flags_an_agent_without_a_persona(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from streams.cli.check import _flag_unknown, _print
    from streams.wire.payloads import Verdict

    _flag_unknown("micheal", REPO / "propositions")
    _flag_unknown("michael", REPO / "propositions")
    verdict = Verdict(draft_id="d", attempt=1, agent_id="michael", decision="commit", outcome="passed", text="x")
    _print(verdict)
    out, err = capsys.readouterr()
    assert "michael: commit (passed; judge -)" in out
    assert err.count("no persona for agent") == 1 and "did you mean 'michael'?" in err
    assert "every check is off for michael" in err and "drift config set michael gate_adherence_enabled=true" in err


def test_the_embedded_database_starts_without_runtime_dir_warnings() -> None:
    from streams.embedded import start_database

    root = Path(tempfile.mkdtemp(prefix="drift-xdg-"))
    root.chmod(0o755)  # PostgreSQL runs as an unprivileged user when started by root
    environ = dict(os.environ)
    os.environ.pop("XDG_RUNTIME_DIR", None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            database = start_database(root)
            database.stop()
    finally:
        os.environ.clear()
        os.environ.update(environ)
        shutil.rmtree(root, ignore_errors=True)
    assert [str(w.message) for w in caught if "XDG_RUNTIME_DIR" in str(w.message)] == []

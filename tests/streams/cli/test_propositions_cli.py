"""``drift propositions validate`` and ``drift propositions show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.errors import ConfigurationError
from engine.models import Dimension
from engine.settings import BUNDLED_PROPOSITIONS, REPO_ROOT
from streams.cli.propositions import app
from tests.conftest import Write

runner = CliRunner()


@pytest.fixture(autouse=True)
def no_directory_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRIFT_PROPOSITIONS_DIR", raising=False)


def test_validate_bundled_tree() -> None:
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: ") and "files" in result.stdout and "propositions" in result.stdout


def test_validate_counts_a_small_tree(write: Write, tmp_path: Path) -> None:
    write("fluency/_default.yaml", "dimension: fluency\npropositions:\n  - {id: a, claim: b}\n  - {id: c, claim: d}\n")
    write("personas/pam.yaml", "id: pam\nname: Pam Beesly\n")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 0
    assert result.stdout.strip() == "ok: 2 files, 2 propositions, 0 interventions"


def test_validate_prints_one_line_per_issue_and_exits_2(write: Write, tmp_path: Path) -> None:
    bad = write(
        "adherence/_default.yaml", "dimension: adherence\npropositions:\n  - id: a\n    claim: x\n    wieght: 2\n"
    )
    write("adherence/jim.yaml", "dimension: adherence\nfirst_n: lots\n")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"{bad}:5: propositions.0.wieght: unknown key 'wieght'; did you mean 'weight'?"
    assert lines[1].startswith(f"{tmp_path / 'adherence/jim.yaml'}:2: first_n: ")
    assert lines[-1] == "2 problem(s) in 2 files"
    assert result.stdout == "" and "Traceback" not in result.output


def test_validate_checks_intervention_files_too(write: Write, tmp_path: Path) -> None:
    write("fluency/_default.yaml", "dimension: fluency\n")
    bad = write("interventions/nudges.yaml", "interventions:\n  - name: x\n    targets: all\n    efect: hi\n")
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{bad}:4: interventions.0.efect: unknown key 'efect'; did you mean 'effect'?" in result.stderr.splitlines()


def test_validate_reads_the_directory_from_the_environment(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("fluency/_default.yaml", "dimension: fluency\n")
    monkeypatch.setenv("DRIFT_PROPOSITIONS_DIR", str(tmp_path))
    result = runner.invoke(app, ["validate"])
    assert result.stdout.strip() == "ok: 1 files, 0 propositions, 0 interventions"


@pytest.mark.parametrize("command", [["validate"], ["show", "-d", "fluency", "--dir"]])
def test_missing_directory_is_a_one_line_error(tmp_path: Path, command: list[str]) -> None:
    result = runner.invoke(app, [*command, str(tmp_path / "nope")])
    assert isinstance(result.exception, ConfigurationError)  # main() prints it as one 'drift:' line, exit 2
    assert str(result.exception) == f"no such propositions directory: {tmp_path / 'nope'}"


def test_show_json_has_the_merged_set() -> None:
    result = runner.invoke(app, ["show", "--agent", "michael", "--dimension", "adherence", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["agent_id"] == "michael" and data["dimension"] == "adherence"
    assert data["first_n"] == 20 and data["last_n"] == 60
    assert data["effective_windows"] == {
        "evaluation": {"first_n": 20, "last_n": 60},
        "action": {"first_n": 20, "last_n": 60},
    }
    ids = [p["id"] for p in data["propositions"]]
    assert "adherence-matches-persona" in ids and "michael-makes-it-about-himself" in ids
    keys = set(data["propositions"][0])
    assert keys == {
        "id",
        "claim",
        "weight",
        "inverted",
        "recommendations_for_improvement",
        "double_check",
        "precondition",
    }
    assert len(data["sources"]) == 2


def test_show_action_lists_the_gate_claims() -> None:
    result = runner.invoke(app, ["show", "--agent", "michael", "--dimension", "adherence", "--json", "--action"])
    assert result.exit_code == 0, result.output
    ids = [p["id"] for p in json.loads(result.stdout)["propositions"]]
    assert "adherence-matches-persona-next" in ids and "adherence-matches-persona" not in ids


def test_show_json_fills_unset_windows_from_both_defaults(write: Write, tmp_path: Path) -> None:
    write("fluency/_default.yaml", "dimension: fluency\nlast_n: 4\npropositions:\n  - {id: a, claim: b}\n")
    result = runner.invoke(app, ["show", "-d", "fluency", "--dir", str(tmp_path), "--json"])
    windows = json.loads(result.stdout)["effective_windows"]
    assert windows == {"evaluation": {"first_n": 10, "last_n": 4}, "action": {"first_n": 5, "last_n": 4}}


def test_show_table_lists_settings_and_propositions(write: Write, tmp_path: Path) -> None:
    write(
        "consistency/_default.yaml",
        """\
        dimension: consistency
        include_personas: false
        propositions:
          - id: same-voice
            claim: "[MESSAGE] {{agent_name}} sounds the same"
            weight: 0.5
            inverted: true
            precondition: has_prior_actions
            recommendations_for_improvement: keep your voice
        """,
    )
    args = ["show", "-d", "consistency", "-a", "kevin", "--dir", str(tmp_path)]
    result = runner.invoke(app, args, env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    for expected in ("include_personas", "false", "unset (evaluation default 10", "same-voice", "0.5"):
        assert expected in out
    assert "inverted" in out and "only if has_prior_actions" in out
    assert "[MESSAGE] {{agent_name}} sounds the same" in out  # not swallowed as rich markup
    assert "-> keep your voice" in out


def test_show_empty_set_says_so(tmp_path: Path) -> None:
    result = runner.invoke(app, ["show", "-d", "convergence", "-a", "toby", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["propositions"] == []
    assert "no propositions for convergence and agent 'toby'" in result.stderr


def test_show_reports_file_issues_and_exits_2(write: Write, tmp_path: Path) -> None:
    bad = write("suitability/pam.yaml", "dimension: suitability\nagent_id: jim\n")
    result = runner.invoke(app, ["show", "-d", "suitability", "-a", "pam", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"{bad}:2: agent_id: is 'jim' but the file is pam.yaml"


def test_show_unknown_dimension_suggests_one() -> None:
    result = runner.invoke(app, ["show", "-d", "fluenc"])
    assert isinstance(result.exception, ConfigurationError)
    assert str(result.exception) == "unknown dimension 'fluenc'; did you mean 'fluency'?"


def test_every_command_and_option_has_help() -> None:
    for command in ("validate", "show"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0
    show_help = runner.invoke(app, ["show", "--help"]).stdout
    for option in ("--dimension", "--agent", "--dir", "--json"):
        assert option in show_help
    flat = " ".join(show_help.split())
    assert all(d.value in flat for d in Dimension), "the --dimension help must list every dimension"
    for info in app.registered_commands:
        assert info.callback is not None and info.callback.__doc__


def test_installed_entry_point_validates_the_bundled_set() -> None:
    drift = Path(sys.executable).parent / "drift"
    command = [str(drift)] if drift.exists() else [sys.executable, "-m", "streams.cli"]
    env = {k: v for k, v in os.environ.items() if k != "DRIFT_PROPOSITIONS_DIR"}
    done = subprocess.run(
        [*command, "propositions", "validate"],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ")
    assert BUNDLED_PROPOSITIONS.is_dir()

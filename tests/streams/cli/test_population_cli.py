"""``drift population generate`` with the scripted model: dry run, generation, resume."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from engine.errors import DriftError
from streams.cli import app


def test_dry_run_generate_and_resume(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"ANTHROPIC_API_KEY": "", "DRIFT_ACTOR": ""}
    args = ["population", "generate", "--profile", "difficult-customers", "--n", "4", "--out", str(tmp_path)]
    dry = runner.invoke(app, [*args, "--dry-run"], env=env)
    assert dry.exit_code == 0 and "calls: 10 (2 + 2N)" in dry.output and "actor scripted" in dry.output
    assert not any(tmp_path.iterdir())
    first = runner.invoke(app, args, env=env)
    assert first.exit_code == 0, first.output
    assert "10 calls this run" in first.output and "scripted:population" in first.output
    assert len(list((tmp_path / "personas").glob("p*.json"))) == 4
    again = runner.invoke(app, args, env=env)
    assert "0 calls this run" in again.output
    bad = runner.invoke(app, [*args[:3], "nope", *args[4:]], env=env)
    assert isinstance(bad.exception, DriftError) and "no such profile" in str(bad.exception)  # main() exits 2

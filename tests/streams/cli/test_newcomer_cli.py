"""Issue 29, findings 1-6: what a newcomer met through the commands, each pinned without a stack.

A missing schema (one check in ``main()``), no write into the bundled data, a fast one-line failure without a
broker, ``--embedded`` inputs checked before anything starts, generated populations that the bundled scenarios
can run, and exit codes that say what happened.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.errors import ConfigurationError, DriftError, ServiceError
from engine.settings import REPO_ROOT
from streams.cli import app
from streams.embedded import WorkerProcess, free_port

runner = CliRunner()
EXAMPLES = REPO_ROOT / "ops" / "examples"
CONVERSATION = EXAMPLES / "office_conversation.jsonl"


def invoke(*args: str, **env: str) -> tuple[int, str, str, BaseException | None]:
    done = runner.invoke(app, list(args), env={"ANTHROPIC_API_KEY": "", "DRIFT_ACTOR": "", "DRIFT_JUDGE": "", **env})
    return done.exit_code, done.stdout, done.stderr, done.exception


# -- 1: a database without the schema ------------------------------------------------------------------------------


class _UndefinedTable(Exception):
    sqlstate = "42P01"  # what asyncpg's UndefinedTableError carries


def test_a_missing_relation_anywhere_in_the_chain_names_the_database_and_the_fix() -> None:
    from streams.cli.common import missing_schema

    try:
        try:
            raise _UndefinedTable('relation "experiments" does not exist')
        except _UndefinedTable as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as exc:
        line = missing_schema(exc, ["experiment", "report", "x", "--database", "postgresql://u:secret@h/db"], {})
    assert line == (
        "the database at postgresql://u:***@h/db has no persona-drift tables: run 'drift db migrate' (or 'drift up')"
    )
    embedded = missing_schema(_UndefinedTable(), ["agents", "list"], {"DRIFT_DATA_DIR": "rel/dir"})
    assert embedded is not None and f"host={Path('rel/dir').absolute() / 'pgdata'} has no" in embedded
    assert missing_schema(ValueError("other"), [], {}) is None


# -- 2: bundled data is read-only ------------------------------------------------------------------------------------


def test_eval_baseline_without_a_target_refuses_the_bundled_baselines_before_judging() -> None:
    bundled = REPO_ROOT / "propositions" / "baselines" / "michael.json"
    before = bundled.read_bytes()
    started = time.monotonic()
    _, _, _, error = invoke("eval", "baseline", "--agents", "michael", "--messages", str(CONVERSATION), "--force")
    assert isinstance(error, ConfigurationError)
    assert "bundled data" in str(error) and "--baseline-dir DIR" in str(error)
    assert bundled.read_bytes() == before
    assert time.monotonic() - started < 30  # refused up front, not after an evaluation


def test_an_installed_package_refuses_even_an_explicit_target(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import bundled
    from engine.settings import bundled_simulations

    target = bundled_simulations() / "populations" / "mine"
    assert bundled.writable_target(target, "a population", "x") == target  # a maintainer's checkout: allowed
    monkeypatch.setattr(bundled, "in_source_checkout", lambda path: False)
    args = ("population", "generate", "--profile", "average-customers", "--n", "2", "--out", str(target))
    _, _, _, error = invoke(*args)
    assert isinstance(error, ConfigurationError) and "pass --out a folder of your own" in str(error)
    assert not target.exists()
    with pytest.raises(ConfigurationError, match="bundled data"):
        bundled.writable_target(REPO_ROOT / "propositions" / "new-cast", "a new cast", "choose a folder of your own")


# -- 3: no broker ---------------------------------------------------------------------------------------------------


@pytest.mark.timed
@pytest.mark.parametrize(
    "command", [("check", "--agent", "michael", "--text", "x"), ("simulate", "--scenario", "brainstorming-average")]
)
def test_a_client_command_without_a_broker_fails_in_one_line_within_the_connect_timeout(
    command: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    broker = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG):
        _, _, _, error = invoke(*command, "--broker", broker, DRIFT_CONNECT_TIMEOUT_S="1")
    assert isinstance(error, ServiceError) and str(error).startswith(f"cannot reach the Kafka broker at {broker}")
    assert time.monotonic() - started < 8  # 1 s per client, not 15 s; before: 15-19 s
    assert [r for r in caplog.records if r.name.startswith("aiokafka")] == []


# -- 4: --embedded checks its inputs first ---------------------------------------------------------------------------


def _no_stack(*args: object, **kwargs: object) -> None:
    raise AssertionError("an embedded stack was started before the inputs were checked")


def test_embedded_commands_check_every_input_before_starting_a_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    import streams.embedded

    for name in ("start_stack", "start_broker", "start_database"):
        monkeypatch.setattr(streams.embedded, name, _no_stack)
    bad_judge = ("--judge", "scripted:/nonexistent.yaml", "--embedded")
    for args in (
        ("simulate", "--scenario", "brainstorming-average", *bad_judge),
        ("simulate", "--scenario", "brainstorming-average", "--embedded", "--actor", "scripted:/nonexistent.yaml"),
        ("simulate", "--scenario", "brainstorming-average", "--embedded", "--population", "/nonexistent"),
        ("experiment", "run", "brainstorming-average", *bad_judge),
        ("experiment", "run", "brainstorming-average", "--embedded", "--prices", "/nonexistent.yaml"),
    ):
        _, _, _, error = invoke(*args)
        assert isinstance(error, DriftError), (args, error)
        assert "nonexistent" in str(error)


def test_a_worker_that_fails_to_start_is_reported_with_its_own_last_error_line(tmp_path: Path) -> None:
    script = "import sys; print('drift: note: judge x', file=sys.stderr); print('drift: boom: bad rules', file=sys.stderr); sys.exit(2)"  # noqa: E501
    worker = WorkerProcess([sys.executable, "-c", script], {}, tmp_path / "worker.log")
    with pytest.raises(ServiceError) as failed:
        worker.start(timeout_s=60)
    assert str(failed.value) == "the worker exited (code 2) before it was ready: boom: bad rules"
    assert "worker.log" not in str(failed.value)


# -- 5: generated populations run the bundled scenarios ---------------------------------------------------------------


def test_a_generated_population_runs_every_bundled_scenario(tmp_path: Path) -> None:
    from engine.personas import load_population
    from engine.simulation.scenario import BUNDLED_SCENARIOS, load_scenario

    out = tmp_path / "pop2"
    code, stdout, _, error = invoke("population", "generate", "--profile", "difficult-customers", "--n", "4",
                                    "--out", str(out))  # fmt: skip
    assert code == 0, (stdout, error)
    scenarios = [load_scenario(str(path)) for path in sorted(BUNDLED_SCENARIOS.glob("*.yaml"))]
    assert any(s.population.fragments for s in scenarios)
    for scenario in scenarios:
        assert len(load_population(out, scenario.population.fragments)) == 4, scenario.name


# -- 6: exit codes ---------------------------------------------------------------------------------------------------

AGENTV = ["agentv", "run", str(EXAMPLES / "agentv" / "office.eval.yaml"),
          "--target", f"recorded:{EXAMPLES / 'agentv' / 'office.answers.jsonl'}",
          "--judge", f"scripted:{EXAMPLES / 'agentv' / 'office_judge.yaml'}"]  # fmt: skip
FAMILY = REPO_ROOT / "propositions" / "metareason" / "dwight-provocations.yaml"
METAREASON = ["metareason", "run", str(FAMILY), "--judge", f"scripted:{EXAMPLES / 'metareason' / 'dwight-judge.yaml'}"]


def test_agentv_thresholds_out_of_range_are_refused_and_an_exit_1_says_why(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    a.write_text('{"eval_id": "x", "score": 0.889}\n')
    b.write_text('{"eval_id": "x", "score": 0.111}\n')
    c.write_text('{"eval_id": "other", "score": 0.5}\n')
    for threshold in ("-1", "0"):
        _, _, _, error = invoke("agentv", "compare", str(a), str(b), "--threshold", threshold)
        assert isinstance(error, ConfigurationError) and "--threshold" in str(error)
    code, _, stderr, _ = invoke("agentv", "compare", str(a), str(c))
    assert code == 1 and "share no case: nothing was compared" in stderr
    _, _, _, error = invoke(*AGENTV, "--threshold", "5")
    assert isinstance(error, ConfigurationError) and "between 0 and 1" in str(error)
    code, _, stderr, _ = invoke(*AGENTV, "--threshold", "0.99")
    assert code == 1 and "mean 0.972 is below --threshold 0.99" in stderr


def test_a_metareason_run_that_answered_nothing_fails_with_the_reason() -> None:
    code, stdout, stderr, _ = invoke(*METAREASON, "--n", "5", "--target",
                                     f"recorded:{EXAMPLES / 'metareason' / 'dwight-answers.jsonl'}")  # fmt: skip
    assert code == 1
    assert "0/5 variants answered, nothing was measured: TargetError:" in stderr and "no recorded answer" in stderr
    assert "persona_confidence: no variant scored: calibration not measured" in stdout
    assert "observed 0.500" not in stdout


def test_an_actor_target_without_a_persona_is_refused() -> None:
    _, _, _, error = invoke(*METAREASON, "--n", "2", "--target", "actor:dwigth")
    assert isinstance(error, ConfigurationError)
    assert "no persona for 'dwigth'" in str(error) and "did you mean 'dwight'?" in str(error)


def test_every_command_module_runs_its_coroutines_through_the_quiet_runner() -> None:
    """``streams.cli.common.run`` silences aiokafka's reconnect lines; a bare ``asyncio.run`` would bring them back."""
    modules = sorted((REPO_ROOT / "streams" / "cli").glob("*.py"))
    assert [p.name for p in modules if p.name != "common.py" and "asyncio.run(" in p.read_text()] == []

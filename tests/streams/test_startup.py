"""A worker's start-up phases (streams/worker/startup.py) and the group settings its Faust app runs with."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.settings import Settings
from streams.worker.startup import PHASES, PREFIX, StartupClock, process_started


def test_the_phases_are_the_times_between_marks_in_order() -> None:
    clock = StartupClock(started=100.0)
    clock.marks = {"cli imports": 101.5, "checks": 102.0, "group join": 105.0, "store": 105.5}
    assert clock.phases() == {"cli imports": 1.5, "checks": 0.5, "group join": 3.0, "store": 0.5}
    assert clock.summary().startswith(
        f"{PREFIX} 5.50 s: cli imports 1.50 s, checks 0.50 s, group join 3.00 s, store 0.50 s; cpu "
    )


def test_a_phase_is_marked_once_and_the_ready_callback_runs_after_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    clock = StartupClock(started=time.monotonic())
    clock.mark("checks")
    first = clock.marks["checks"]
    clock.mark("checks")
    called: list[str] = []
    clock.on_ready(lambda: called.append(capsys.readouterr().err))()
    assert clock.marks["checks"] == first and "store" in clock.marks
    assert called and called[0].startswith(f"drift: {PREFIX} ") and "checks" in called[0]
    assert set(clock.phases()) <= set(PHASES)


def test_the_process_start_is_in_the_past() -> None:
    import psutil  # type: ignore[import-untyped]  # (installed with pgserver; no stubs here)

    started = process_started()
    age = time.time() - psutil.Process().create_time()  # the same age, from another source (wall clock)
    assert started <= time.monotonic()
    assert abs((time.monotonic() - started) - age) < 2.0  # not "now", not boot: this process's own start


def test_the_faust_app_takes_the_group_timeouts_and_static_membership_from_the_settings(tmp_path: Path) -> None:
    from streams.runtime.faust_app import PromptTableManager, faust_app
    from tests.streams.fakes import NothingToClose, no_skipped_batches

    settings = Settings(data_dir=tmp_path, broker="127.0.0.1:1", group_session_timeout_s=4.5, group_heartbeat_s=0.75,
                        group_rebalance_timeout_s=7.0, group_instance_id="worker-7")  # fmt: skip
    app = faust_app(settings, 3, closing=NothingToClose(), skipped=no_skipped_batches)
    conf = app.conf
    assert (conf.broker_session_timeout, conf.broker_heartbeat_interval, conf.broker_rebalance_timeout) == (
        4.5,
        0.75,
        7.0,
    )
    assert conf.consumer_group_instance_id == "worker-7"
    assert isinstance(app.tables, PromptTableManager)
    default = faust_app(Settings(data_dir=tmp_path, broker="127.0.0.1:1"), 3, closing=NothingToClose(),
                        skipped=no_skipped_batches)  # fmt: skip
    assert default.conf.consumer_group_instance_id is None  # dynamic membership unless a worker is given an id


def test_a_worker_start_imports_neither_scipy_nor_numpy() -> None:
    # scipy.stats was ~1.5 s of every worker's start (the alert service imports the evaluation baseline, which
    # imports engine.statistics), numpy about 0.2 s more (the same path, the anchors' calibration, the gate's
    # statistics and the vocabulary check); only an experiment, a calibration, a spread, a vocabulary overlap or
    # a /stats snapshot needs them, and imports them when it does.
    code = ("import sys, streams.cli, streams.cli.service, streams.worker.runner, streams.services.stats; "
            "from streams.worker.metrics import metrics_registry; "  # registering a collector calls it
            "metrics_registry(streams.services.stats.GateStats()); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'numpy'}))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout

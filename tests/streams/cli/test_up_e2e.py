"""`drift up`: the whole embedded stack in one process group, a `ready` line, a clean stop on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from engine.settings import Settings
from streams.client import GateClient
from streams.embedded import WorkerProcess, free_port, port_in_use

pytestmark = pytest.mark.e2e
DRIFT = str(Path(sys.executable).parent / "drift")


async def test_up_prints_ready_serves_drafts_and_stops_on_sigterm() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="drift-up-"))
    data_dir.chmod(0o755)  # PostgreSQL runs as an unprivileged user when we are root
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    env["DRIFT_WEB_PORT"] = str(free_port())
    up = WorkerProcess([DRIFT, "up", "--kafka-port", str(port), "--data-dir", str(data_dir)], env, data_dir / "up.log")
    up.start(timeout_s=90)
    try:
        match = re.match(r"ready broker=(\S+) database=(\S+) judge=(.+)$", up.ready_line)
        assert match, up.ready_line
        broker, database, judge = match.groups()
        assert broker == f"127.0.0.1:{port}" and str(data_dir) in database and "offline" in judge
        async with GateClient(settings=Settings(broker=broker), timeout_s=30) as gate:
            verdict = await gate.check(agent_id="creed", text="I've been involved in a number of cults.")
        assert verdict.decision == "commit"
        for _ in range(20):  # registration on first sight is asynchronous (within about a second)
            shown = subprocess.run(
                [DRIFT, "config", "show", "creed", "--json", "--database", database],
                env=env, capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            assert shown.returncode == 0, shown.stderr
            if '"registered": true' in shown.stdout:
                break
            time.sleep(0.5)
        assert '"registered": true' in shown.stdout
    finally:
        assert up.process is not None
        up.process.send_signal(signal.SIGTERM)
        up.process.wait(timeout=60)
    assert up.process.returncode == 0
    assert not port_in_use(port)  # the embedded broker stopped with it

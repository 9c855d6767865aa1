"""What the first-run tests share (test_first_run_cli.py, test_first_run_e2e.py and their ``timed`` halves):
`drift` through the real entry point, timed, and what a fast failure must look like."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from streams.embedded import free_port
from tests.stack import DRIFT, Stack

#: A command that fails on bad input must say so well within this (it used to wait 15 s and more).
FAIL_FAST_S = 10.0


def drift(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    started = time.monotonic()
    done = subprocess.run(
        [DRIFT, *args], env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout, check=False,
        cwd=cwd,
    )  # fmt: skip
    return done, time.monotonic() - started


def drift_on(
    stack: Stack, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """:func:`drift` against the embedded stack's broker and database."""
    return drift(*args, env={"DRIFT_DATABASE_URL": stack.database.url, "DRIFT_BROKER": stack.broker.bootstrap,
                             **(env or {})})  # fmt: skip


def unreachable_broker() -> dict[str, str]:
    return {"DRIFT_BROKER": f"127.0.0.1:{free_port()}", "DRIFT_CONNECT_TIMEOUT_S": "2"}


def assert_one_line_error(done: subprocess.CompletedProcess[str], elapsed: float, *fragments: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("drift: "), done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout
    assert elapsed < FAIL_FAST_S, elapsed
    for fragment in fragments:
        assert fragment in lines[0], lines[0]

"""``drift view`` refuses to serve beyond loopback without a token, and a port in use, in one line."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from tests.stack import DRIFT, Stack


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "DRIFT_VIEW_TOKEN"} | (env or {})
    return subprocess.run([DRIFT, "view", *args], capture_output=True, text=True, timeout=60, check=False, env=environ)


def test_a_public_address_needs_a_token() -> None:
    done = _run("--host", "0.0.0.0")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "drift: refusing to serve on 0.0.0.0 without a token: set DRIFT_VIEW_TOKEN (or bind 127.0.0.1)"
    ]


@pytest.mark.e2e
def test_a_port_in_use_is_one_line(stack: Stack) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = _run("--port", port, "--broker", stack.broker.bootstrap, env={"DRIFT_DATABASE_URL": stack.database.url})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"drift: cannot listen on 127.0.0.1:{port}: address already in use"]

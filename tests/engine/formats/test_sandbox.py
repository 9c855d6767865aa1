"""User code runs out of process: limits hold, no secrets leak in, no network where the platform allows it."""

from __future__ import annotations

import os
import sys

import pytest

from engine.formats.sandbox import Limits, network_isolation_available, run_sandboxed

PY = sys.executable
FAST = Limits(wall_s=5, cpu_s=1, memory_mb=256)


async def _python(code: str, limits: Limits = FAST, stdin: bytes = b"") -> tuple[int | None, str, str | None]:
    result = await run_sandboxed([PY, "-c", code], stdin, limits=limits)
    return result.returncode, result.stdout.decode(), result.error


async def test_stdin_in_stdout_out() -> None:
    code, out, error = await _python("import sys; print(sys.stdin.read().upper())", stdin=b"beets")
    assert (code, out.strip(), error) == (0, "BEETS", None)


async def test_an_infinite_loop_is_stopped_by_the_cpu_limit() -> None:
    code, _, error = await _python("while True: pass")
    assert code is not None and code < 0
    assert error is not None and "CPU limit" in error


async def test_a_huge_allocation_fails_inside_the_child() -> None:
    code, out, _ = await _python("x = bytearray(10 * 1024**3)\nprint('allocated')")
    assert code != 0
    assert "allocated" not in out


async def test_a_sleeper_is_killed_at_the_wall_clock_deadline() -> None:
    result = await run_sandboxed([PY, "-c", "import time; time.sleep(60)"], limits=Limits(wall_s=0.5))
    assert result.timed_out
    assert result.error == "timed out after 0.5 s"


async def test_the_service_environment_does_not_reach_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DRIFT_DATABASE_URL", "postgresql://u:pw@h/db")
    _, out, _ = await _python("import os; print(sorted(os.environ))")
    assert "ANTHROPIC_API_KEY" not in out
    assert "DRIFT_DATABASE_URL" not in out
    assert "PATH" in out


async def test_no_network_when_the_platform_allows_it() -> None:
    if not network_isolation_available():
        pytest.skip("unshare --net is not available on this machine: network isolation cannot be tested")
    probe = (
        "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), 1)\n"
        "except OSError as e:\n    print(e.errno)"
    )
    code, out, _ = await _python(probe)
    assert code == 0
    assert out.strip() in {"101", "111"}  # unreachable (no interface) or refused on the namespace's own loopback


async def test_a_missing_program_is_an_error_not_an_exception() -> None:
    result = await run_sandboxed(["/nonexistent/program"], limits=FAST)
    assert not result.ok
    assert result.error is not None


async def test_the_child_cannot_see_the_services_processes() -> None:
    if not network_isolation_available():
        pytest.skip("unshare is not available on this machine: process isolation cannot be tested")
    probe = (
        "import os\n"
        "print(all(int(p) < 10 for p in os.listdir('/proc') if p.isdigit()))\n"
        f"print(os.path.exists('/proc/{os.getpid()}/environ'))"
    )
    code, out, _ = await _python(probe)
    assert code == 0
    assert out.split() == ["True", "False"]  # a PID namespace of its own; the service's /proc is out of reach

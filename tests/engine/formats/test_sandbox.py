"""The process runner: limits hold, no secrets leak in, the wall clock ends a child, all without ``preexec_fn``."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from engine.formats.sandbox import Limits, run_limited

PY = sys.executable
FAST = Limits(wall_s=5, cpu_s=1, memory_mb=256)


async def _python(code: str, limits: Limits = FAST, stdin: bytes = b"") -> tuple[int | None, str, str | None]:
    result = await run_limited([PY, "-c", code], stdin, limits=limits)
    return result.returncode, result.stdout.decode(), result.error


async def test_stdin_in_stdout_out() -> None:
    code, out, error = await _python("import sys; print(sys.stdin.read().upper())", stdin=b"beets")
    assert (code, out.strip(), error) == (0, "BEETS", None)


async def test_an_infinite_loop_is_stopped_by_the_cpu_limit() -> None:
    code, _, error = await _python("while True: pass", Limits(wall_s=30, cpu_s=1, memory_mb=256))
    assert code is not None and code < 0
    assert error is not None and "CPU limit" in error


async def test_a_huge_allocation_fails_inside_the_child() -> None:
    code, out, _ = await _python("x = bytearray(10 * 1024**3)\nprint('allocated')")
    assert code != 0
    assert "allocated" not in out


async def test_a_sleeper_is_killed_at_the_wall_clock_deadline() -> None:
    result = await run_limited([PY, "-c", "import time; time.sleep(60)"], limits=Limits(wall_s=0.5))
    assert result.timed_out
    assert result.error == "timed out after 0.5 s"


async def test_the_service_environment_does_not_reach_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    monkeypatch.setenv("DRIFT_DATABASE_URL", "postgresql://u:pw@h/db")
    _, out, _ = await _python("import os; print(sorted(os.environ))")
    assert "ANTHROPIC_API_KEY" not in out
    assert "DRIFT_DATABASE_URL" not in out
    assert "PATH" in out


async def test_a_missing_program_is_an_error_not_an_exception() -> None:
    result = await run_limited(["/nonexistent/program"], limits=FAST)
    assert not result.ok
    assert result.error is not None


async def test_the_limits_are_set_in_the_command_prefix_not_in_preexec_fn(monkeypatch: pytest.MonkeyPatch) -> None:
    """``preexec_fn`` is unsafe in a process with threads (Python's documentation); ``prlimit`` sets them."""
    seen: dict[str, Any] = {}
    real = asyncio.create_subprocess_exec

    async def spy(*argv: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        seen.update(kwargs, argv=argv)
        return await real(*argv, **kwargs)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)
    limits = Limits(wall_s=5, cpu_s=3, memory_mb=300, file_mb=2, processes=40)
    code, out, _ = await _python("print(open('/proc/self/limits').read())", limits=limits)
    assert code == 0
    assert seen.get("preexec_fn") is None
    assert seen["argv"][0].endswith("prlimit")
    rows = {line[:26].strip(): line[26:].split() for line in out.splitlines()[1:] if line.strip()}
    assert rows["Max cpu time"][:2] == ["3", "4"]
    assert rows["Max address space"][:2] == [str(300 * 1024 * 1024)] * 2
    assert rows["Max file size"][:2] == [str(2 * 1024 * 1024)] * 2
    assert rows["Max processes"][:2] == ["40", "40"]
    assert rows["Max core file size"][:2] == ["0", "0"]

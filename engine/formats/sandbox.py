"""Run untrusted user code out of process, with limits and without the service's secrets.

:func:`run_sandboxed` starts ``argv`` as a child in its own session with:

* an **empty environment** except ``PATH``, ``LANG`` and a throwaway ``HOME``/``TMPDIR`` (no API keys, no
  ``DRIFT_*`` settings), unless the caller passes extra variables on purpose;
* **resource limits** set in the child before it executes (``RLIMIT_CPU`` seconds, ``RLIMIT_AS`` bytes of
  address space, ``RLIMIT_FSIZE`` for files it writes, ``RLIMIT_NPROC`` where allowed);
* a **wall-clock** deadline after which the whole process group is killed;
* **no network** when the platform allows it: the child runs under ``unshare --net`` (a fresh network namespace
  with only a downed loopback) when that works here (probed once); otherwise the limitation is reported by
  :func:`network_isolation_available` and documented.

Input goes on stdin, output is read from stdout (capped); nothing raises for a misbehaving child — the
:class:`SandboxResult` says what happened (exit code, timeout, the limit that killed it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    wall_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 512
    file_mb: int = 16
    max_output_bytes: int = 1 * _MB
    network: bool = False


@dataclass(frozen=True, slots=True)
class SandboxResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    #: a one-line human reason when the child did not finish normally (timeout, signal, limit, start failure)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0


@functools.cache
def network_isolation_available() -> bool:
    """True when ``unshare --net`` can run a child in an empty network namespace on this machine."""
    binary = shutil.which("unshare")
    if binary is None:
        return False
    try:
        done = subprocess.run([binary, "--net", "true"], capture_output=True, timeout=5, check=False)  # noqa: S603
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _limit_child(limits: Limits) -> None:  # runs in the child between fork and exec
    cpu = max(1, int(limits.cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = limits.memory_mb * _MB
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    files = limits.file_mb * _MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _argv(argv: Sequence[str], limits: Limits) -> list[str]:
    if limits.network or not network_isolation_available():
        return list(argv)
    return ["unshare", "--net", "--", *argv]


def _reason(returncode: int | None, limits: Limits) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    signum = -returncode
    if signum in (signal.SIGXCPU, signal.SIGKILL):
        return f"killed by {signal.Signals(signum).name} (CPU limit {limits.cpu_s} s or memory {limits.memory_mb} MB)"
    return f"killed by signal {signal.Signals(signum).name}"


async def run_sandboxed(
    argv: Sequence[str],
    stdin: bytes = b"",
    *,
    cwd: Path | None = None,
    limits: Limits = Limits(),
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run ``argv`` under ``limits``; ``env`` adds variables to the minimal environment."""
    if not argv or shutil.which(argv[0]) is None:
        return SandboxResult(None, b"", b"", error=f"could not start {argv[0] if argv else ''!r}: no such program")
    with tempfile.TemporaryDirectory(prefix="drift-sandbox-") as home:
        child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home}
        child_env.update(env or {})
        try:
            process = await asyncio.create_subprocess_exec(
                *_argv(argv, limits),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(cwd) if cwd is not None else home,
                env=child_env,
                start_new_session=True,
                preexec_fn=functools.partial(_limit_child, limits),
                limit=limits.max_output_bytes,
            )
        except OSError as exc:
            return SandboxResult(None, b"", b"", error=f"could not start {argv[0]!r}: {exc.strerror or exc}")
        return await _communicate(process, stdin, limits)


async def _communicate(process: asyncio.subprocess.Process, stdin: bytes, limits: Limits) -> SandboxResult:
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin), timeout=limits.wall_s)
    except TimeoutError:
        _kill_group(process)
        await process.wait()
        return SandboxResult(None, b"", b"", timed_out=True, error=f"timed out after {limits.wall_s:g} s")
    except (BrokenPipeError, ConnectionResetError):
        out, err = b"", b""
        await process.wait()
    finally:
        _kill_group(process)
    out = out[: limits.max_output_bytes]
    return SandboxResult(process.returncode, out, err[-64_000:], error=_reason(process.returncode, limits))


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)

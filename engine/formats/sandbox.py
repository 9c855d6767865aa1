"""Run untrusted user code out of process, with limits and without the service's secrets.

:func:`run_sandboxed` starts ``argv`` as a child in its own session with:

* an **empty environment** except ``PATH``, ``LANG`` and a throwaway ``HOME``/``TMPDIR`` (no API keys, no
  ``DRIFT_*`` settings), unless the caller passes extra variables on purpose;
* **resource limits** set in the child before it executes (``RLIMIT_CPU`` seconds, ``RLIMIT_AS`` bytes of
  address space, ``RLIMIT_FSIZE`` for files it writes, ``RLIMIT_NPROC`` where allowed);
* a **wall-clock** deadline after which the whole process group is killed;
* **its own namespaces** when the platform allows it: the child runs under ``unshare`` in a fresh network
  namespace (no interface but a downed loopback: no network) and a fresh PID namespace with its own ``/proc``
  (it cannot see, signal or read ``/proc/<pid>/environ`` of the service or any other process). As root this
  is ``unshare --net --pid --fork --mount-proc``; unprivileged, the same inside a user namespace
  (``--user --map-root-user``). The first variant that works here is probed once; where none does,
  :func:`isolation_prefix` is empty, :func:`network_isolation_available` is False, and only the environment,
  the limits and the process group protect the service (documented in docs/formats/).

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


_NAMESPACES = ("--net", "--pid", "--fork", "--mount-proc")
#: tried in order: as root, then unprivileged inside a user namespace
_CANDIDATES = ((*_NAMESPACES,), ("--user", "--map-root-user", *_NAMESPACES))


@functools.cache
def isolation_prefix() -> tuple[str, ...]:
    """The ``unshare …`` words that give a child its own network and PID namespaces here, or () if none work."""
    binary = shutil.which("unshare")
    if binary is None:
        return ()
    for flags in _CANDIDATES:
        argv = [binary, *flags, "--", "true"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=5, check=False)  # noqa: S603
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return (binary, *flags, "--")
    return ()


def network_isolation_available() -> bool:
    """True when children run without network (and without a view of other processes)."""
    return bool(isolation_prefix())


def _limit_child(limits: Limits) -> None:  # runs in the child between fork and exec
    cpu = max(1, int(limits.cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = limits.memory_mb * _MB
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    files = limits.file_mb * _MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


#: Between ``unshare --fork`` and the program, a shell turns a death by signal into exit code 128 + signal:
#: util-linux 2.38's unshare reports a signalled child as a plain exit 1, which would hide "CPU limit".
_REPORT_SIGNAL = ("/bin/sh", "-c", '"$@"; exit $?', "sandbox")


def _argv(argv: Sequence[str], limits: Limits) -> list[str]:
    prefix = () if limits.network else isolation_prefix()
    return [*prefix, *_REPORT_SIGNAL, *argv] if prefix else list(argv)


def _returncode(raw: int | None, isolated: bool) -> int | None:
    """The child's exit code, a death by signal N as -N (through the isolation shell it arrives as 128 + N)."""
    if isolated and raw is not None and raw > 128 and (raw - 128) in signal.valid_signals():
        return -(raw - 128)
    return raw


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
    code = _returncode(process.returncode, bool(isolation_prefix()) and not limits.network)
    return SandboxResult(code, out, err[-64_000:], error=_reason(code, limits))


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)

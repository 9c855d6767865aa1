"""Run a program out of process with limits and without the service's secrets (the process runner).

:func:`run_limited` starts ``argv`` as a child in its own session with:

* an **empty environment** except ``PATH``, ``LANG`` and a throwaway ``HOME``/``TMPDIR`` (no API keys, no
  ``DRIFT_*`` settings), unless the caller passes extra variables on purpose;
* **resource limits** set by util-linux's ``prlimit`` in the command prefix, before the program starts
  (``RLIMIT_CPU`` seconds, ``RLIMIT_AS`` bytes of address space, ``RLIMIT_FSIZE`` for files it writes,
  ``RLIMIT_NPROC`` — enforced only for an unprivileged user —, no core files). Not ``preexec_fn``, which
  Python documents as unsafe in a process with threads;
* a **wall-clock** deadline after which the whole process group is killed.

This is all a *target* gets (``command:`` targets, AgentV ``cli`` targets: the system under evaluation, chosen
by the operator, which needs the network and its own files). Code named in a file — Plexus code nodes, AgentV
code judges — runs through :mod:`engine.formats.usercode`, which adds the bubblewrap sandbox in front of the
same runner (``prefix``).

Input goes on stdin, output is read from stdout (capped); nothing raises for a misbehaving child — the
:class:`SandboxResult` says what happened (exit code, timeout, the limit that killed it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
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
    #: processes of the sandbox's user (``RLIMIT_NPROC``); only an unprivileged user is held to it
    processes: int = 64


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


def limit_prefix(limits: Limits) -> tuple[str, ...]:
    """``prlimit --cpu=… --as=… … --``: the limits, applied by a program that then executes the command."""
    binary = shutil.which("prlimit") or "/usr/bin/prlimit"
    cpu = max(1, int(limits.cpu_s))
    memory, files = limits.memory_mb * _MB, limits.file_mb * _MB
    return (
        binary,
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={memory}:{memory}",
        f"--fsize={files}:{files}",
        f"--nproc={limits.processes}:{limits.processes}",
        "--core=0:0",
        "--",
    )


@dataclass(frozen=True, slots=True)
class Launch:
    """How :func:`run_limited` starts the child: words before the program, descriptors it inherits."""

    prefix: tuple[str, ...] = ()
    pass_fds: tuple[int, ...] = ()
    #: the prefix reports a death by signal N as exit 128 + N (bubblewrap does): read it back as -N
    signal_as_exit: bool = False


def _returncode(raw: int | None, launch: Launch) -> int | None:
    """The child's exit code, a death by signal N as -N."""
    if launch.signal_as_exit and raw is not None and raw > 128 and (raw - 128) in signal.valid_signals():
        return -(raw - 128)
    return raw


def _reason(returncode: int | None, limits: Limits) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    signum = -returncode
    if signum in (signal.SIGXCPU, signal.SIGKILL):
        return f"killed by {signal.Signals(signum).name} (CPU limit {limits.cpu_s} s or memory {limits.memory_mb} MB)"
    return f"killed by signal {signal.Signals(signum).name}"


async def run_limited(
    argv: Sequence[str],
    stdin: bytes = b"",
    *,
    cwd: Path | None = None,
    limits: Limits = Limits(),
    env: Mapping[str, str] | None = None,
    launch: Launch = Launch(),
) -> SandboxResult:
    """Run ``argv`` under ``limits``; ``env`` adds variables to the minimal environment."""
    if not launch.prefix and (not argv or shutil.which(argv[0]) is None):
        return SandboxResult(None, b"", b"", error=f"could not start {argv[0] if argv else ''!r}: no such program")
    with tempfile.TemporaryDirectory(prefix="drift-run-") as home:
        child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home}
        child_env.update(env or {})
        try:
            process = await asyncio.create_subprocess_exec(
                *limit_prefix(limits),
                *launch.prefix,
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(cwd) if cwd is not None else home,
                env=child_env,
                start_new_session=True,
                pass_fds=launch.pass_fds,
                limit=limits.max_output_bytes,
            )
        except OSError as exc:
            return SandboxResult(None, b"", b"", error=f"could not start {argv[0]!r}: {exc.strerror or exc}")
        return await _communicate(process, stdin, limits, launch)


async def _communicate(
    process: asyncio.subprocess.Process, stdin: bytes, limits: Limits, launch: Launch
) -> SandboxResult:
    try:
        async with asyncio.timeout(limits.wall_s):
            out, err = await process.communicate(stdin)
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
    code = _returncode(process.returncode, launch)
    return SandboxResult(code, out, err[-64_000:], error=_reason(code, limits))


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)

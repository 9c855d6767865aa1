"""Code named in a file — Plexus code nodes, AgentV code judges — runs here, in one sandbox or not at all.

:func:`run_user_code` runs a program under Debian's ``bubblewrap`` (the sandbox behind Flatpak; the command
line is :mod:`.bwrap`'s) with a seccomp filter compiled by libseccomp (:mod:`.seccomp_filter`), inside the
process runner's rlimits, wall clock and empty environment (:func:`.sandbox.run_limited`). What the program
may and may not do is one table in ``docs/formats/sandbox.md``.

Where that sandbox cannot be had — bubblewrap or libseccomp's binding missing, no namespaces on this kernel —
nothing runs: :meth:`CodeSandbox.require` raises a one-line :class:`SandboxUnavailable` (exit 2 at the CLI),
unless the operator opted in with ``--allow-unsandboxed-code``; then the code runs with the process runner's
limits only, and :attr:`CodeSandbox.label` marks every output of the run. There is no weaker sandbox.

The first use probes once per process (builds the seccomp program and starts the interpreter in the
sandbox) and remembers the answer; a CLI calls :meth:`CodeSandbox.require` before any work, so the probe never
stalls a running event loop.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigurationError
from engine.formats.bwrap import Runtime, bwrap_argv, interpreter, python_runtime
from engine.formats.sandbox import Launch, Limits, SandboxResult, run_limited

FILTER_SCRIPT = Path(__file__).with_name("seccomp_filter.py")
UNSANDBOXED_FLAG = "--allow-unsandboxed-code"
UNSANDBOXED_LABEL = f"UNSANDBOXED user code ({UNSANDBOXED_FLAG})"
_START_FAILURES = (1, 126, 127)
_START_PREFIXES = ("bwrap: execvp ", "setpriv: failed to execute ")


class SandboxUnavailable(ConfigurationError):
    """Code from a file would run, the sandbox cannot be had here, and the operator did not opt out of it."""


@dataclass(frozen=True, slots=True)
class Probe:
    """The outcome of trying the sandbox once: the seccomp program when it works, else why not."""

    program: bytes | None
    reason: str


@dataclass(frozen=True, slots=True)
class CodeSandbox:
    """How this run treats code from files: the sandbox, or (opted in, where it cannot be had) none."""

    allow_unsandboxed: bool = False
    bwrap: str = "bwrap"
    #: the Python that has libseccomp's binding (Debian's ``python3-seccomp`` is built for it)
    system_python: str = "/usr/bin/python3"

    def probe(self) -> Probe:
        return _probe(self.bwrap, self.system_python)

    @property
    def available(self) -> bool:
        return self.probe().program is not None

    @property
    def unsandboxed(self) -> bool:
        """True when code runs without the sandbox (it cannot be had, and the operator allowed that)."""
        return self.allow_unsandboxed and not self.available

    @property
    def label(self) -> str | None:
        """What every output of a run must say about its user code: None when it ran sandboxed."""
        return UNSANDBOXED_LABEL if self.unsandboxed else None

    def refusal(self, what: str) -> str:
        return (
            f"{what} runs code from a file, and the sandbox for it is unavailable here: {self.probe().reason}; "
            f"pass {UNSANDBOXED_FLAG} to run it without one (as this service's user, with its whole filesystem)"
        )

    def require(self, what: str) -> None:
        """Raise :class:`SandboxUnavailable` unless code can run (sandboxed, or unsandboxed by choice)."""
        if not self.available and not self.allow_unsandboxed:
            raise SandboxUnavailable(self.refusal(what))


#: the default policy: the sandbox or nothing
STRICT = CodeSandbox()


def _seccomp_program(system_python: str) -> tuple[bytes | None, str]:
    if shutil.which(system_python) is None:
        return None, f"{system_python} (for libseccomp's binding) is missing"
    done = subprocess.run(  # noqa: S603 — our own script, fixed arguments
        [system_python, "-I", str(FILTER_SCRIPT)], capture_output=True, timeout=30, check=False
    )
    if done.returncode != 0 or not done.stdout:
        if b"No module named 'seccomp'" in done.stderr:
            return None, "libseccomp's Python binding is missing (Debian: apt-get install python3-seccomp)"
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return None, f"the seccomp filter could not be built: {last}"
    return done.stdout, ""


@functools.cache
def _probe(bwrap: str, system_python: str) -> Probe:
    binary = shutil.which(bwrap)
    if binary is None:
        return Probe(None, "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)")
    program, reason = _seccomp_program(system_python)
    if program is None:
        return Probe(None, reason)
    read = _loaded_pipe(program)
    try:
        words = _words(binary, python_runtime(), [None], Limits(), read)
        done = subprocess.run(  # noqa: S603
            [*words, str(interpreter()), "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=30,
            check=False,
            pass_fds=(read,),
            env={"PATH": "/usr/bin:/bin"},
        )
    finally:
        os.close(read)
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return Probe(None, f"bubblewrap cannot build the sandbox here: {last}")
    return Probe(program, "")


def _loaded_pipe(program: bytes) -> int:
    """The reading end of a pipe holding the seccomp program (written, then closed): bubblewrap reads it all."""
    read, write = os.pipe()
    os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
    os.close(write)
    return read


def _words(binary: str, runtime: Runtime, folders: Sequence[Path | None], limits: Limits, fd: int) -> list[str]:
    folder, also = folders[0], [f for f in folders[1:] if f is not None]
    root = os.geteuid() == 0
    return bwrap_argv(binary, runtime, folder=folder, also=also, tmp_mb=limits.file_mb * 4, seccomp_fd=fd, as_root=root)


def closed_folder(folders: Sequence[Path | None]) -> str | None:
    """As root the sandbox's user is a stranger: a folder it must see needs the others' search bit."""
    for folder in folders:
        if folder is not None and os.geteuid() == 0 and not folder.stat().st_mode & 0o001:
            mode = oct(folder.stat().st_mode & 0o777)[2:]
            return (
                f"{folder} is closed to other users (mode {mode}) and the sandbox runs code as an unprivileged "
                "user of its own: open it (chmod o+rx) and make the files the code reads readable (o+r)"
            )
    return None


async def run_user_code(
    argv: Sequence[str],
    stdin: bytes = b"",
    *,
    sandbox: CodeSandbox,
    runtime: Runtime,
    folder: Path | None,
    limits: Limits,
    also: Sequence[Path] = (),
    what: str = "this file",
) -> SandboxResult:
    """Run ``argv`` (code from a file) in the sandbox, in ``folder`` (read-only, like the folders ``also``);
    unsandboxed only by the operator's choice."""
    probe = sandbox.probe()
    if probe.program is None:
        if not sandbox.allow_unsandboxed:
            return SandboxResult(None, b"", b"", error=sandbox.refusal(what))
        return await run_limited(argv, stdin, cwd=folder, limits=limits)
    closed = closed_folder([folder, *also])
    if closed is not None:
        return SandboxResult(None, b"", b"", error=closed)
    binary = shutil.which(sandbox.bwrap) or sandbox.bwrap
    read = _loaded_pipe(probe.program)
    try:
        words = _words(binary, runtime, [folder, *also], limits, read)
        launch = Launch(prefix=tuple(words), pass_fds=(read,), signal_as_exit=True)
        done = await run_limited(argv, stdin, limits=limits, launch=launch)
    finally:
        os.close(read)
    return _explained(done, argv)


def _explained(done: SandboxResult, argv: Sequence[str]) -> SandboxResult:
    """A program that could not start (``bwrap: execvp …``, ``setpriv: failed to execute …``) as one line."""
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    if done.error is None and done.returncode in _START_FAILURES and last.startswith(_START_PREFIXES):
        problem = f"could not start {argv[0]!r} in the sandbox: {last.rpartition(': ')[2]}"
        return SandboxResult(None, done.stdout, done.stderr, error=problem)
    return done

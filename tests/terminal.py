"""A command on a pseudo-terminal, as in an interactive shell (for the Ctrl-C tests).

The command leads a new session whose controlling terminal is the pty, so its process group is the terminal's
foreground group: typing ``\\x03`` makes the line discipline send SIGINT to that whole group, exactly as a
terminal emulator or tmux does — unlike ``kill -INT`` on one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import subprocess
import termios
import time
from collections.abc import Callable, Sequence

import psutil  # type: ignore[import-untyped]  # (installed with pgserver; no stubs here)


def foreground_signals() -> None:
    """In a child before exec: SIGINT and SIGQUIT as an interactive shell leaves them for a foreground job.

    A job a non-interactive shell starts in the background (``make test &``, ``nohup … &``, a CI runner's
    detached step) inherits SIGINT and SIGQUIT ignored, and every process it starts inherits that too: a
    command started from such a test run would never see the Ctrl-C the test types, though a user's would."""
    for sig in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)


class Terminal:
    def __init__(self, args: Sequence[str], env: dict[str, str]) -> None:
        master, slave = os.openpty()

        def become_foreground() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            foreground_signals()

        self.process = subprocess.Popen(  # setsid + TIOCSCTTY need a hook between fork and exec
            list(args), stdin=slave, stdout=slave, stderr=slave, env=env,
            preexec_fn=become_foreground,  # noqa: PLW1509
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self._raw = b""
        self._interrupted_at = 0

    @property
    def after_interrupt(self) -> str:
        """What the command printed after the first Ctrl-C."""
        return _plain(self._raw[self._interrupted_at :])

    @property
    def text(self) -> str:
        """Everything printed so far, as plain text (line ends and styles of the terminal removed)."""
        return _plain(self._raw)

    def _pump(self, timeout_s: float) -> bool:
        """Read what is there within ``timeout_s``; False once the terminal is closed (the command exited)."""
        ready, _, _ = select.select([self.master], [], [], timeout_s)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every process holding the terminal has gone
            return False
        self._raw += chunk
        return bool(chunk)

    def read_until(self, found: Callable[[str], bool], timeout_s: float) -> bool:
        """Read output until ``found(text)`` holds; False on timeout or when the command ends first."""
        deadline = time.monotonic() + timeout_s
        while not found(self.text):
            if time.monotonic() > deadline or not self._pump(0.1):
                return found(self.text)
        return True

    def press_ctrl_c(self) -> None:
        self._interrupted_at = self._interrupted_at or len(self._raw)
        os.write(self.master, b"\x03")

    def wait(self, timeout_s: float) -> float | None:
        """Seconds until the command exited (reading its output meanwhile), None when it did not in time."""
        started = time.monotonic()
        while self.process.poll() is None:
            if time.monotonic() - started > timeout_s:
                return None
            self._pump(0.05)
        elapsed = time.monotonic() - started
        while self._pump(0.05) and time.monotonic() - started < timeout_s + 5:
            pass  # the rest of the output
        return elapsed

    def close(self) -> None:
        """Kill the command and what it started: the embedded stack's processes lead sessions of their own, so a
        command that did not stop them (a failed test) would leave them busy for the rest of the run."""
        try:
            started = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            started = []
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for child in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        os.close(self.master)


_STYLE = re.compile(r"\x1b\[[0-9;]*m")


def _plain(raw: bytes) -> str:
    return _STYLE.sub("", raw.decode(errors="replace").replace("\r\n", "\n"))


def error_lines(text: str) -> list[str]:
    """Lines a user would read as an error."""
    words = ("error", "traceback", "unclosed", "exception", "warning")
    return [line for line in text.splitlines() if any(word in line.lower() for word in words)]

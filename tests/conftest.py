"""Shared fixtures. End-to-end tests get the embedded stack (real Tansu, real PostgreSQL)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import tempfile
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.embedded import free_port, start_broker, start_database
from streams.store import Store
from tests.stack import Scenario, Stack

#: ``write(relative_path, yaml_text) -> Path``: the type of the :func:`write` fixture.
Write = Callable[[str, str], Path]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    """Factory: write dedented text to ``tmp_path/<relative>`` (parents created) and return the path."""

    def _write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return _write


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`make test`'s ``-n auto``: pytest-xdist's own count (one worker per core), plus one. The end-to-end tests
    spend much of their time waiting on a broker's rebalance or a worker's start, so two workers left about a
    quarter of two cores idle; a third ran the suite in 518 s against 593 s with two (the same tree, one run after
    the other). A count set in ``PYTEST_XDIST_AUTO_NUM_WORKERS`` is taken as it is."""
    from xdist.plugin import pytest_xdist_auto_num_workers as xdist_count  # type: ignore[import-untyped]

    counted: int = xdist_count(config)
    return counted if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else counted + 1


#: The test files measured longest (wall seconds per file in one full run on 2 cores, longest first): `make test`
#: starts them first (see :func:`pytest_collection_modifyitems`). Only the order depends on this list: a stale or
#: missing entry costs time, never a result. Measured 2026-11-26 (a loaded run: about 1.6 times a quiet one's).
LONGEST_FIRST = (
    "tests/streams/test_gate_e2e.py",  # 161 s
    "tests/streams/test_ops_cli_e2e.py",  # 150 s
    "tests/streams/cli/test_credentials_e2e.py",  # 144 s
    "tests/streams/test_chaos_wire_e2e.py",  # 126 s
    "tests/streams/test_monitor_e2e.py",  # 112 s
    "tests/streams/test_hardening_e2e.py",  # 110 s
    "tests/streams/cli/test_up_restart_e2e.py",  # 109 s
    "tests/streams/test_experiment_partial_e2e.py",  # 107 s
    "tests/streams/test_evaluations_e2e.py",  # 104 s
    "tests/streams/test_experiment_e2e.py",  # 85 s
    "tests/streams/test_scale_out_e2e.py",  # 82 s
    "tests/streams/test_redelivery_e2e.py",  # 75 s
    "tests/streams/test_simulate_e2e.py",  # 68 s
    "tests/test_packaging.py",  # 60 s
    "tests/streams/cli/test_everyday_cli.py",  # 54 s
    "tests/streams/cli/test_first_run_e2e.py",  # 45 s
    "tests/streams/test_shadow_e2e.py",  # 42 s
    "tests/streams/test_metrics_e2e.py",  # 33 s
    "tests/streams/test_eviction_e2e.py",  # 31 s
    "tests/streams/test_steps_e2e.py",  # 27 s
    "tests/streams/test_client_e2e.py",  # 25 s
    "tests/streams/test_adapters_e2e.py",  # 24 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest files first: the files of :data:`LONGEST_FIRST`, then every other file holding an end-to-end test,
    then the rest, each in collection order (a file's tests keep theirs). pytest-xdist's ``--dist loadfile`` hands
    out files in this order (`make test` turns off its own ordering by test count, which put the one-test e2e files
    last): the run then ends with short files on every pytest worker, not with one running a two-minute file.

    Files holding a test that runs alone (:func:`_timed_alone`) are handed out once no other end-to-end file is
    left: such a test first waits, its core idle, for the test running on the other core, which is then a short
    unit test, not a minute-long e2e test (that wait was up to 90 s). A file whose other tests hold the shared lock
    for long (e2e tests not ``timed``) goes among the unit tests, the first one before them, the next ones spread
    through them (two such files side by side would wait for each other's long tests); the files holding only
    short tests besides their timed ones come last."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def e2e(test: pytest.Item) -> bool:
        return test.get_closest_marker("e2e") is not None

    def exclusive(test: pytest.Item) -> bool:
        return test.get_closest_marker("timed") is not None or "alone" in getattr(test, "fixturenames", ())

    alone = [path for path, tests in files.items() if any(map(exclusive, tests))]
    long = [path for path in alone if any(e2e(t) and t.get_closest_marker("timed") is None for t in files[path])]
    units = [path for path, tests in files.items() if path not in alone and not any(map(e2e, tests))]
    rank: dict[str, tuple[int, int]] = {path: (2, 2 * i + 1) for i, path in enumerate(units)}
    rank |= {path: (2, 2 * (j * len(units) // len(long))) for j, path in enumerate(long)}
    rank |= {path: (3, 0) for path in alone if path not in long}
    for path in files.keys() - rank.keys():
        rank[path] = (0, LONGEST_FIRST.index(path)) if path in LONGEST_FIRST else (1, 0)
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


#: The open lock file of the running test (None outside pytest-xdist): see :func:`_timed_alone` and :func:`alone`.
_LOCK = pytest.StashKey[Any]()

#: ``with alone(): ...`` (or ``async with``): the type of the :func:`alone` fixture.
Alone = Callable[[], "Section"]


@pytest.fixture(autouse=True)
def _timed_alone(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Under pytest-xdist (``make test``), a test marked ``timed`` (it asserts a wall-clock bound of the product:
    a fail-fast error, an orderly stop, a live update) runs while no other test of this run does: every test holds
    a shared lock on a file of the run's base temp dir, a timed one an exclusive lock. A test that times only a
    part of what it does takes the exclusive lock for that part (:func:`alone`)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    exclusive = request.node.get_closest_marker("timed") is not None
    lock = tmp_path_factory.getbasetemp().parent / "timed.lock"  # the run's dir, shared by its xdist workers
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        request.node.stash[_LOCK] = handle
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Section:
    """The exclusive lock of the running test for the length of a block (see :func:`alone`): ``with`` waits in
    this thread, ``async with`` in another one, so the event loop (and the test's Kafka clients) keeps running."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __enter__(self) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            fcntl.flock(self.handle, fcntl.LOCK_SH)

    async def __aenter__(self) -> None:
        await asyncio.to_thread(self.__enter__)

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


@pytest.fixture
def alone(request: pytest.FixtureRequest) -> Alone:
    """``with alone(): ...`` runs the block while no other test of the run does (its set-up need not): for a test
    whose wall-clock bound covers only part of it. flock turns the shared lock into the exclusive one and back,
    releasing it meanwhile, so two tests asking at once cannot deadlock."""
    return lambda: Section(request.node.stash.get(_LOCK, None))


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    # pgserver runs PostgreSQL as an unprivileged user when we are root: pytest's 0700 temp dirs won't do.
    root = Path(tempfile.mkdtemp(prefix="drift-e2e-"))
    root.chmod(0o755)
    database = start_database(root)
    broker = start_broker(free_port(), log_file=root / "tansu.log")

    async def migrate() -> None:
        async with await Store.connect(database.url) as store:
            await store.migrate()

    asyncio.run(migrate())
    yield Stack(broker, database)
    broker.stop()
    database.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def scenario(stack: Stack, tmp_path: Path) -> Iterator[Scenario]:
    """A fresh topic prefix (topics, consumer group, changelogs) on the shared stack."""
    prefix = f"t{uuid.uuid4().hex[:8]}."
    item = Scenario(stack, prefix, tmp_path)
    yield item
    item.close()

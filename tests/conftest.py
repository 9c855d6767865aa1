"""Shared fixtures. End-to-end tests get the embedded stack (real Tansu, real PostgreSQL)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

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

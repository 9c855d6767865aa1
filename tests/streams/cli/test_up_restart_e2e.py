"""`drift up` stopped and started again on the same data directory: the broker comes back empty (it keeps topics
in memory), the agents' similarity windows come back from PostgreSQL, and `drift replay --from-database`
re-publishes the drafts the broker no longer holds."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine.settings import Settings
from streams.client import GateClient
from streams.client.admin import publish_config
from streams.embedded import WorkerProcess, free_port
from streams.store import Store
from tests.stack import eventually, read_records

pytestmark = pytest.mark.e2e
DRIFT = str(Path(sys.executable).parent / "drift")
REPEATED = "I will be taking the minutes of this meeting, as I always do, in my own shorthand."


class Up:
    """`drift up` on one data directory and port, started and stopped as often as a test likes."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir, self.port = data_dir, free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
        self.env.update(DRIFT_WEB_PORT=str(free_port()), **env)
        self.process: WorkerProcess | None = None
        self.database = ""

    def start(self) -> Settings:
        args = [DRIFT, "up", "--kafka-port", str(self.port), "--data-dir", str(self.data_dir)]
        self.process = WorkerProcess(args, self.env, self.data_dir / "up.log").start(timeout_s=90)
        match = re.match(r"ready broker=(\S+) database=(\S+)", self.process.ready_line)
        assert match, self.process.ready_line
        self.database = match.group(2)
        return Settings(broker=match.group(1), database_url=self.database)

    def stop(self) -> None:
        assert self.process is not None and self.process.process is not None
        self.process.process.send_signal(signal.SIGTERM)
        assert self.process.process.wait(timeout=60) == 0


@pytest.fixture(
    params=[
        {},  # the defaults: no checkpoint is old enough, the restore reads the (empty) changelogs whole
        # a short window: checkpoints of the broker's first life are old enough to be considered, and ignored
        {"DRIFT_RESTORE_WINDOW_S": "1", "DRIFT_RESTORE_CHECKPOINT_S": "0.5"},
    ],
    ids=["defaults", "short-window"],
)
def up(request: pytest.FixtureRequest) -> Iterator[Up]:
    data_dir = Path(tempfile.mkdtemp(prefix="drift-restart-"))
    data_dir.chmod(0o755)  # PostgreSQL runs as an unprivileged user when we are root
    stack = Up(data_dir, request.param)
    yield stack
    if stack.process is not None:
        stack.process.stop()
    shutil.rmtree(data_dir, ignore_errors=True)


async def fetch(settings: Settings, sql: str, *args: Any) -> list[Any]:
    async with await Store.connect(settings.database()) as store:
        return list(await store.pool.fetch(sql, *args))


async def test_windows_survive_a_restart_and_replay_reads_the_database(up: Up) -> None:
    settings = up.start()
    async with await Store.connect(settings.database()) as store:
        config = await store.set_config("angela", {"gate_similarity_enabled": True})
    await publish_config(settings, "angela", config.model_dump())
    async with GateClient(settings=settings, timeout_s=30) as gate:
        first = await gate.check(agent_id="angela", text=REPEATED, run_id="before")
        other = await gate.check(agent_id="oscar", text="Let me explain the difference between a deficit and a debt.")
    assert first.decision == other.decision == "commit"

    async def recorded() -> bool:
        rows = await fetch(settings, "SELECT count(*) AS n FROM run_messages WHERE message_id = ANY($1)",
                           [first.draft_id, other.draft_id])  # fmt: skip
        old = await fetch(
            settings, "SELECT count(*) AS n FROM changelog_checkpoints WHERE taken_at < now() - interval '1 second'"
        )
        return bool(rows[0]["n"] == 2 and old[0]["n"] > 0)

    assert await eventually(recorded, timeout_s=30), "the commits and a restore checkpoint were not recorded"
    up.stop()

    settings = up.start()  # same data directory: an empty broker, the same database
    assert not await read_records(settings.broker, "drift.drafts", 1, timeout_s=2.0)  # the broker forgot them
    async with GateClient(settings=settings, timeout_s=30) as gate:
        again = await gate.check(agent_id="angela", text=REPEATED, run_id="after")
    assert again.decision == "retry", again
    assert again.similarity is not None and not again.similarity.passed
    assert again.similarity.most_similar == REPEATED  # the window of before the restart

    replayed = subprocess.run(
        [DRIFT, "replay", "--from-database", "--since", "-1h", "--to-prefix", "replayed.", "--json",
         "--broker", settings.broker, "--database", up.database],
        env=up.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    counts = orjson.loads(replayed.stdout.strip().splitlines()[-1])
    assert counts["replayed"] >= 2 and counts["invalid"] == 0, counts
    drafts = [orjson.loads(r.value) for r in await read_records(settings.broker, "replayed.drafts", counts["replayed"])]
    by_id = {d["draft_id"]: d for d in drafts}
    assert by_id[first.draft_id]["text"] == REPEATED and by_id[first.draft_id]["run_id"] == "before"
    assert by_id[first.draft_id]["attempt"] == 1 and by_id[other.draft_id]["agent_id"] == "oscar"

"""Scenario d: workers SIGKILLed and restarted while 200 agents stream drafts, 100 of them with checks configured.

Before issue 20, a restarted worker decided drafts with the default configuration (no check at all) until its
configuration cache had loaded: in one run 2,147 of 10,000 drafts of configured agents were committed unchecked,
14 drafts got both a commit and a reject, and ``run_messages`` had rows for rejected drafts and rows with no commit
behind them. To open that start-up window on every restart, the scenario holds the migration lock
(``pg_advisory_lock(7311001)``, taken by ``Store.migrate``) while it kills a worker and starts the next one, for a
few seconds after the new one says on ``/health`` that it waits for the migration; then it releases the lock and
waits for ``/health`` to answer 200 (not for the ``ready`` line).

Half the configured agents reject a failed draft (``max_correction_attempts: 0``), half ask for a retry
(``max_correction_attempts: 1``; the scenario sends no second attempt, so those drafts stay retry-only); the judge
answers 9 or 2 at random, so a draft judged twice, or once without its checks, shows in the figures.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections import defaultdict
from typing import Any

import httpx
import orjson

from ops.chaos.common import Figures, Stage, advisory_lock, message_ids, prepare, random_scores, read_all, send_stream
from ops.chaos.wire import deaths
from ops.fakes.messages_api import MessagesApiServer
from streams.embedded import WorkerProcess
from streams.wire.topics import Topics

MIGRATION_LOCK = 7311001  # the advisory lock Store.migrate takes
# The suitability check has an inverted proposition: the fake's 9 scores it 6.97, its 2 scores 4.48. A threshold
# of 5.5 makes the two answers decide differently (at the default 7 both fail).
CHECKS = {"gate_suitability_enabled": True, "gate_suitability_threshold": 5.5, "continue_on_failure": False}
REJECTING = {**CHECKS, "max_correction_attempts": 0}
RETRYING = {**CHECKS, "max_correction_attempts": 1}
#: what every verdict record of one attempt must have in common (docs/gate-design.md, "Verdict idempotency")
SAME = ("decision", "outcome", "text", "scores", "feedback")
#: the figures whose target is 0
ZERO = ("lost", "unchecked drafts of configured agents", "drafts with two decisions", "conflicting verdicts",
        "wrong decisions", "rows missing (committed, no row)", "rows without a commit", "worker deaths")  # fmt: skip


def launch(worker: WorkerProcess) -> WorkerProcess:
    """Start the worker without waiting for its ``ready`` line (it cannot finish starting while the lock is held)."""
    with open(worker.log_path, "ab") as log:
        worker.process = subprocess.Popen(worker.args, env=worker.env, stdout=log, stderr=log, start_new_session=True)
    return worker


async def health(worker: WorkerProcess) -> tuple[int, dict[str, Any]] | None:
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            response = await client.get(f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/health")
        return response.status_code, response.json()
    except (httpx.HTTPError, ValueError):  # not listening yet, or not our page
        return None


async def wait_health(worker: WorkerProcess, migrating: bool, timeout_s: float) -> bool:
    """Until ``/health`` says the worker waits for the migration (``migrating``) or answers 200 (otherwise)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answer = await health(worker)
        if answer is not None:
            status, body = answer
            if (migrating and "migrating" in str(body.get("waiting_for"))) or (not migrating and status == 200):
                return True
        await asyncio.sleep(0.1)
    return False


async def restart(stage: Stage, workers: list[WorkerProcess], killed: list[WorkerProcess], judge_url: str,
                  hold_s: float) -> tuple[bool, float, float]:  # fmt: skip
    """SIGKILL the oldest worker and start another while the migration lock is held; (the new one was seen
    waiting for the migration, seconds from the lock's release to ``/health`` 200 or -1, seconds from the kill)."""
    killed_at = time.monotonic()
    async with advisory_lock(stage, MIGRATION_LOCK):
        killed.append(workers.pop(0))
        killed[-1].kill()
        fresh = launch(stage.worker(judge_url))
        workers.append(fresh)
        held = await wait_health(fresh, migrating=True, timeout_s=45.0)
        await asyncio.sleep(hold_s)  # drafts keep arriving for its partitions while it cannot load its configs
    released = time.monotonic()
    ready = await wait_health(fresh, migrating=False, timeout_s=60.0)
    now = time.monotonic()
    return held, round(now - released, 1) if ready else -1.0, round(now - killed_at, 1)


async def run(stage: Stage, *, drafts: int = 4_000, rate: float = 100.0, agents: int = 200, configured: int = 100,
              restarts: int = 3, first_s: float = 4.0, hold_s: float = 2.5) -> Figures:  # fmt: skip
    names = [f"{stage.prefix}agent{i}" for i in range(agents)]
    await prepare(stage, names[0:configured:2], config=REJECTING)
    await prepare(stage, names[1:configured:2], config=RETRYING)
    async with MessagesApiServer(random_scores(seed=20)) as judge:
        workers = list(await asyncio.gather(*(stage.start(stage.worker(judge.base_url)) for _ in range(2))))
        killed: list[WorkerProcess] = []
        sending = asyncio.ensure_future(send_stream(stage, names, drafts, rate))
        cycles = []
        await asyncio.sleep(first_s)
        for _ in range(restarts):  # back to back: a restart takes 10-15 s here, mostly the new process's start
            cycles.append(await restart(stage, workers, killed, judge.base_url, hold_s))
        stream = await sending
        verdicts = await _verdicts(stage, stream.run_id, stream.drafts)
    figures = _judge(verdicts, stream.drafts, set(names[0:configured:2]), set(names[1:configured:2]))
    committed = {draft_id for draft_id, v in verdicts.items() if {r["decision"] for r in v} == {"commit"}}
    rows = await message_ids(stage, stream.run_id, len(committed))
    died = deaths(stage, killed)
    figures |= {
        "run_messages rows": len(rows),
        "rows missing (committed, no row)": len(committed - rows),
        "rows without a commit": len(rows - committed),
        "restarts (SIGKILL, lock held)": len(cycles),
        "restarts seen waiting for the migration on /health": sum(held for held, _, _ in cycles),
        "slowest /health 200 after the lock's release (s)": max((s for _, s, _ in cycles), default=-1.0),
        "slowest restart, SIGKILL to /health 200 (s)": max((s for _, _, s in cycles), default=-1.0),
        "worker deaths": died,
    }
    every_window = all(held and seconds >= 0 for held, seconds, _ in cycles)
    figures["ok"] = int(every_window and all(figures[key] == 0 for key in ZERO))
    return figures


async def _verdicts(stage: Stage, run_id: str, ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    def complete(records: list[Any]) -> bool:
        return ids <= {orjson.loads(r.value)["draft_id"] for r in records}

    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in await read_all(stage.settings, Topics(stage.prefix).verdicts, complete, timeout_s=120.0):
        verdict = orjson.loads(record.value)
        if str(verdict["draft_id"]).startswith(run_id):
            found[verdict["draft_id"]].append(verdict)
    return found


def _judge(verdicts: dict[str, list[dict[str, Any]]], sent: set[str], rejecting: set[str],
           retrying: set[str]) -> Figures:  # fmt: skip
    """The verdict figures: lost, unchecked, two decisions, conflicting, and decisions the checks do not dictate."""
    unchecked = wrong = two_decisions = conflicting = 0
    decisions: dict[str, int] = defaultdict(int)
    for records in verdicts.values():
        agent = records[0]["agent_id"]
        two_decisions += len({r["decision"] for r in records}) > 1
        conflicting += len({orjson.dumps([r[k] for k in SAME], option=orjson.OPT_SORT_KEYS) for r in records}) > 1
        unchecked += agent in rejecting | retrying and any(not r["scores"] for r in records)
        wrong += any(r["decision"] != _dictated(r, agent in rejecting, agent in retrying) for r in records)
        decisions[records[0]["decision"]] += 1
    return {
        "drafts sent": len(sent),
        "verdicted": len(sent & set(verdicts)),
        "lost": len(sent - set(verdicts)),
        "decisions (commit / retry / reject)": f"{decisions['commit']} / {decisions['retry']} / {decisions['reject']}",
        "unchecked drafts of configured agents": unchecked,
        "drafts with two decisions": two_decisions,
        "conflicting verdicts": conflicting,
        "wrong decisions": wrong,
    }


def _dictated(verdict: dict[str, Any], rejecting: bool, retrying: bool) -> str:
    """The decision the agent's configuration dictates for this verdict's scores (unconfigured: no check, commit)."""
    if not (rejecting or retrying):
        return "commit" if not verdict["scores"] else "checked without a configuration"
    if not verdict["scores"]:
        return "no check run"
    passed = all(score["passed"] for score in verdict["scores"].values())
    return "commit" if passed else "reject" if rejecting else "retry"

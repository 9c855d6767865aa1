"""GateLane against stand-ins of its ports: inline decisions, acks only after delivery, bad input, send failures."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiokafka.errors import ProducerClosed

from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from streams.services.configs import ConfigCache
from streams.services.gate import GateDeps
from streams.worker.lanes import GateLane


@dataclass(eq=False)
class Record:
    key: bytes
    value: bytes
    partition: int = 0
    offset: int = 0
    topic: str = "drafts"


def draft(n: int, agent: str = "michael", text: str | None = None, attempt: int = 1) -> Record:
    body = {"draft_id": f"d{n}", "agent_id": agent, "text": text or f"message number {n} about paper",
            "attempt": attempt}  # fmt: skip
    return Record(agent.encode(), orjson.dumps(body), offset=n)


@dataclass
class FakeBatch:
    """Gathers records like OutputBatch; ``flush`` settles every future (or fails, when told to)."""

    fail: bool = False
    sent: list[tuple[str, bytes]] = field(default_factory=list)
    futures: list[asyncio.Future[Any]] = field(default_factory=list)

    values: list[bytes | None] = field(default_factory=list)

    async def send(self, topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> Any:
        self.sent.append((topic, key))
        self.values.append(value)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.futures.append(future)
        return future

    async def flush(self) -> None:
        if self.fail:
            raise ConnectionError("broker went away")


class FakeRuntime:
    """Fakes of a gate lane's ports (consumer, output batches, dead letters) and the gate's dependencies."""

    def __init__(self, *, fail: bool = False, configs: ConfigCache | None = None) -> None:
        self.acked: list[Record] = []
        self.released: list[Record] = []
        self.dead: list[tuple[Record, str]] = []
        self.batch = FakeBatch(fail=fail)
        configs = configs or ConfigCache(default=AgentConfig(gate_similarity_enabled=True))
        self.deps = GateDeps(Settings(), ScriptedJudge.from_rules({"default": 9}),
                             PropositionLibrary(BUNDLED_PROPOSITIONS), configs, self.batch.send, {}, {})  # fmt: skip

    def ack(self, message: Record) -> None:
        self.acked.append(message)

    def release(self, message: Record) -> None:
        self.released.append(message)

    async def dead_letter(self, record: Record, reason: str) -> None:
        self.dead.append((record, reason))

    def lane(self) -> GateLane:
        return GateLane(self.deps, self, lambda: self.batch, self.dead_letter)  # type: ignore[arg-type,return-value]


async def test_inline_drafts_are_acked_only_once_their_records_are_delivered() -> None:
    rt = FakeRuntime()
    lane = rt.lane()
    records = [draft(1), draft(2, "pam")]
    await lane(records)
    assert [topic for topic, _ in rt.batch.sent].count(rt.deps.topics.verdicts) == 2 and rt.acked == []
    await lane.flushed()
    for future in rt.batch.futures[:-1]:
        future.set_result(None)
    await asyncio.sleep(0)
    assert rt.acked == []  # one record still in flight holds the whole batch
    rt.batch.futures[-1].set_result(None)
    await asyncio.sleep(0)
    assert rt.acked == records


async def test_a_bad_draft_is_dead_lettered_and_acked_and_the_rest_goes_on() -> None:
    rt = FakeRuntime()
    bad = Record(b"jim", b'{"draft_id": "x", "agent_id": "dwight", "text": "hi"}', offset=7)
    good = draft(8)
    lane = rt.lane()
    await lane([bad, good])
    assert rt.dead and rt.dead[0][0] is bad and "agent_id" in rt.dead[0][1]
    assert rt.acked == [bad]
    await lane.flushed()
    for future in rt.batch.futures:
        future.set_result(None)
    await asyncio.sleep(0)
    assert rt.acked == [bad, good]


async def test_a_failed_send_leaves_the_drafts_unacked(caplog: pytest.LogCaptureFixture) -> None:
    rt = FakeRuntime(fail=True)
    lane = rt.lane()
    await lane([draft(1)])
    await lane.flushed()
    assert rt.acked == [] and "stay unacked" in caplog.text


class ClosedOutput(FakeRuntime):
    """The output producer is closed (a worker stopping) or the broker refuses: every send raises."""

    def __init__(self, configs: ConfigCache) -> None:
        super().__init__(configs=configs)
        self.deps.send = self.refuse
        self.batch.send = self.refuse  # type: ignore[method-assign]

    async def refuse(self, topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> Any:
        raise ProducerClosed()


@pytest.mark.parametrize("judged", [True, False], ids=["judged draft", "inline draft"])
async def test_a_draft_whose_records_cannot_be_sent_is_neither_dead_lettered_nor_acked(judged: bool) -> None:
    # a draft judged while the worker stops (its output closing) comes back to the partition's next owner: a dead
    # letter plus an ack would leave its orchestrator without a verdict
    config = AgentConfig(gate_similarity_enabled=True, gate_adherence_enabled=judged)
    rt = ClosedOutput(ConfigCache(default=config))
    lane = rt.lane()
    await lane([draft(1)])
    await lane.dispatcher.wait_idle()
    await lane.flushed()
    assert rt.dead == [] and rt.acked == []


class DeferredVerdicts(dict[str, Any]):
    """The verdict-record table: each flush returns a delivery future the test settles."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[asyncio.Future[Any]] = []

    async def flush(self, keys: Any, send: Any) -> list[asyncio.Future[Any]]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return [future]


async def test_batches_do_not_wait_for_their_verdict_records_but_their_outputs_do_in_batch_order() -> None:
    rt = FakeRuntime()
    verdicts = rt.deps.verdicts = DeferredVerdicts()
    shipped: list[str] = []  # output batches in the order they were submitted

    @dataclass
    class Named(FakeBatch):
        name: str = ""

        async def flush(self) -> None:
            shipped.append(self.name)

    batches: list[Named] = []

    def new_batch() -> Named:
        batches.append(made := Named(name=f"batch{len(batches) + 1}"))
        return made

    lane = GateLane(rt.deps, rt, new_batch, rt.dead_letter)  # type: ignore[arg-type]
    await lane([draft(1)])  # returns with its verdict record still unconfirmed: the next batch goes on
    await lane([draft(2)])
    await asyncio.sleep(0)
    outputs = [b.name for b in batches if any(t == rt.deps.topics.verdicts for t, _ in b.sent)]
    assert len(outputs) == 2 and not set(outputs) & set(shipped)  # no verdict before its record
    verdicts.pending[1].set_result(None)  # the second batch's record first: it still waits for the first
    await asyncio.sleep(0.01)
    assert not set(outputs) & set(shipped)
    verdicts.pending[0].set_result(None)
    await lane.flushed()
    assert [name for name in shipped if name in outputs] == outputs  # batch order
    assert rt.acked == []
    for future in [*verdicts.pending, *(f for each in batches for f in each.futures)]:
        if not future.done():
            future.set_result(None)
    await asyncio.sleep(0)
    assert [r.offset for r in rt.acked] == [1, 2]


async def test_a_judged_draft_waits_for_the_link_before_it_not_for_later_ones() -> None:
    configs = ConfigCache(default=AgentConfig(gate_similarity_enabled=True))
    configs.apply("oscar", AgentConfig(gate_adherence_enabled=True))  # judged; the others are decided inline
    rt = FakeRuntime(configs=configs)
    verdicts = rt.deps.verdicts = DeferredVerdicts()
    lane = rt.lane()
    await lane([draft(1)])  # an inline link whose verdict record is not confirmed yet
    await lane([draft(2, "oscar")])
    await lane([draft(3, "pam")])  # a later link, never confirmed during this test
    await asyncio.sleep(0.01)
    judged = [t for t, k in rt.batch.sent if k == b"oscar" and t == rt.deps.topics.verdicts]
    assert judged == []  # oscar's verdict waits for the first link
    assert len(verdicts.pending) == 2  # the records of the two inline links
    later = verdicts.pending[1]  # the later link's: never confirmed
    idle = asyncio.ensure_future(lane.dispatcher.wait_idle())
    for _ in range(500):  # confirm every other record as it is asked for: the first link's, then oscar's
        for future in verdicts.pending:
            if future is not later and not future.done():
                future.set_result(None)
        if idle.done():
            break
        await asyncio.sleep(0.01)
    assert idle.done() and not later.done()
    judged = [t for t, k in rt.batch.sent if k == b"oscar" and t == rt.deps.topics.verdicts]
    assert len(judged) == 1


class RestoringPending(dict[str, Any]):
    """The pending-attempts table while partition 0's changelog tail is read behind Faust's recovery."""

    def __init__(self) -> None:
        super().__init__()
        self.tail_read = asyncio.Event()

    def restoring(self, partition: int | None) -> bool:
        return partition == 0 and not self.tail_read.is_set()

    async def restored(self, partition: int | None) -> None:
        if partition == 0:
            await self.tail_read.wait()

    def read_tail(self) -> None:
        self["d1"] = [{"attempt": 1, "text": "the first try", "total_score": 2.0}]
        self.tail_read.set()


async def test_a_later_attempt_waits_for_its_earlier_ones_being_restored_and_first_attempts_do_not() -> None:
    rt = FakeRuntime()
    pending = rt.deps.pending = RestoringPending()
    lane = rt.lane()
    async with asyncio.timeout(5):  # the lane does not wait for the restore
        await lane([draft(1, attempt=2), draft(2, "pam"), Record(b"kevin", draft(3, "kevin", attempt=2).value, 1)])
        await lane.flushed()
    verdicts = [orjson.loads(v or b"{}") for (t, _), v in zip(rt.batch.sent, rt.batch.values, strict=True)
                if t == rt.deps.topics.verdicts]  # fmt: skip
    assert {v["draft_id"] for v in verdicts} == {"d2", "d3"}  # pam's first attempt, kevin's of another partition
    assert lane.dispatcher.busy("michael")  # waits in its agent's queue, not in the lane
    pending.read_tail()
    async with asyncio.timeout(5):
        await lane.dispatcher.wait_idle()
    verdicts = [orjson.loads(v or b"{}") for (t, k), v in zip(rt.batch.sent, rt.batch.values, strict=True)
                if t == rt.deps.topics.verdicts and k == b"michael"]  # fmt: skip
    assert len(verdicts) == 1 and verdicts[0]["unknown_earlier_attempts"] == 0  # decided with its first attempt

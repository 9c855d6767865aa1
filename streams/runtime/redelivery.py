"""Verdict records a restore must bring back: those of drafts a redelivery can hand the gate again.

A verdict record exists so that a redelivered draft gets its first verdict again instead of a second judgement
(:func:`streams.services.gate.process_draft`). A draft is redelivered only at or past its partition's committed
offset (the group's): every draft before it has its verdict and its offset committed. So the restore of a
``verdict-records`` partition needs only the records of drafts at or past that offset, and where they start in the
changelog follows from the checkpoints (:mod:`streams.runtime.restore`):

* every checkpoint of ``verdict-records`` also records the true end of the drafts partition (``source_end``),
  taken *after* the changelog's end (``end_offset``);
* a draft at or past ``source_end`` was appended after that moment, so it was fetched, judged and its verdict
  record written later still: at a changelog offset at or past ``end_offset``;
* so a restore may start at the newest checkpoint whose ``source_end`` is at most the committed offset.

With commits flowing, that is the checkpoint taken just before the latest commit: seconds of records, where the
window (``DRIFT_RESTORE_WINDOW_S``, 15 minutes) is every draft of the last 15 minutes. A commit that stalls makes
the start earlier, never later than the window's (a restore starts at the later of the two). Other tables keep the
window: an agent's pending attempts wait for a next attempt that may come much later, its counts and windows are
long-lived.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from engine.settings import Settings
from streams.wire.kafka import client_kwargs, probed_end_offsets, start_once
from streams.wire.topics import Topics, app_id, changelog_table

#: The table whose restore follows the committed offsets of its source, the drafts topic.
VERDICTS_TABLE = "verdict-records"
#: How long a restore waits for the committed offsets before it keeps the window's start.
COMMITTED_WAIT_S = 2.0
#: How long the drafts partitions' true ends may take to probe; a partition not probed in time gets no source end.
PROBE_MS = 2000


class DraftOffsets:
    """The drafts partitions' offsets that bound a ``verdict-records`` restore: their true ends (recorded with each
    checkpoint) and the gate's committed offsets (read at each restore). ``consumer(topic)`` is the restore plan's
    plain consumer for ``topic`` (this one probes the drafts topic with its own)."""

    def __init__(self, settings: Settings, consumer: Callable[[str], Awaitable[AIOKafkaConsumer]]) -> None:
        self.settings = settings
        self.topic = Topics(settings.topic_prefix).drafts
        self._consumer = consumer
        self._admin: AIOKafkaAdminClient | None = None

    def follows(self, changelog_topic: str) -> bool:
        """Whether the restore of ``changelog_topic`` may start at its committed drafts' checkpoint."""
        return changelog_table(changelog_topic) == VERDICTS_TABLE

    async def ends(self, partitions: Iterable[int]) -> dict[int, int]:
        """The true end offset of each drafts partition (Tansu reports its last batch's base + 1, too low for a
        bound that must not be); a partition whose probe did not answer in time is absent."""
        consumer = await self._consumer(self.topic)
        tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
        if not tps:
            return {}
        reported = await consumer.end_offsets(tps)
        try:
            true, unanswered = await probed_end_offsets(consumer, reported, PROBE_MS)
        finally:
            consumer.assign([])
        return {tp.partition: end for tp, end in true.items() if tp not in unanswered}

    async def committed(self, partitions: Iterable[int]) -> dict[int, int]:
        """The gate's committed offset of each drafts partition (absent: nothing committed yet)."""
        tps = [TopicPartition(self.topic, p) for p in sorted(partitions)]
        if not tps:
            return {}
        if self._admin is None:
            admin = AIOKafkaAdminClient(**client_kwargs(self.settings))
            await start_once(admin)  # a bound ran out, or the broker refused: the next restore starts another
            self._admin = admin
        offsets = await self._admin.list_consumer_group_offsets(app_id(self.settings), partitions=tps)
        return {tp.partition: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}

    async def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            await admin.close()

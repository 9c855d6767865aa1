"""Offset commits that never pass a record of a stream partition that was not handled (the worker's Faust consumer)."""

from __future__ import annotations

from typing import Any

from faust.types import TP

from streams.runtime import faust_private as private


class HeadOfLineCommits:
    """Mixin for Faust's consumer: never commit past the oldest record of a partition not handled yet
    (docs/known-issues.md, "Faust commits past a record still being handled").

    Faust computes the offset to commit from the acked offsets, but its guard against a missing head compares
    them with the committed offset as if it were the last record handled, when it is the next one to read: with
    ``committed = c`` and ``c + 1 …`` acked while ``c`` is still being judged (a slow judge call ahead of quick
    drafts of other agents), it commits past ``c``. When the worker then gives ``c`` up — a graceful stop, or a
    rebalance that withdraws the drafts it had queued — the next owner starts after it, and the draft is never
    answered. Here the commit waits until ``c`` is acked (or lies in a gap: an offset that never comes).
    """

    def _new_offset(self, tp: TP) -> int | None:
        if head_unhandled(self, tp):
            return None
        offset: int | None = super()._new_offset(tp)  # type: ignore[misc]
        return offset

    async def on_partitions_revoked(self, revoked: set[TP]) -> None:
        """Faust forgets a revoked partition's committed offset before the revocation's handlers run, and the
        lanes' last acks arrive during those handlers: the committed offset is kept here, so that the guard still
        sees a hole between it and those acks (records released, not handled) and a commit made during the
        rebalance does not pass it."""
        consumer: Any = self
        last: dict[TP, int] = consumer.__dict__.setdefault("_drift_last_committed", {})
        for tp in revoked:
            if (offset := private.committed_offset(consumer, tp)) is not None:
                last[tp] = offset
        await super().on_partitions_revoked(revoked)  # type: ignore[misc]


def head_unhandled(consumer: Any, tp: TP) -> bool:
    """True when the next offset the group would read on ``tp`` is neither acked nor in a gap while later ones
    are: a commit now would skip it. During a revocation Faust no longer knows the committed offset of the
    partitions it gives up; the one it had is used (:meth:`HeadOfLineCommits.on_partitions_revoked`)."""
    head = private.committed_offset(consumer, tp)
    if head is None:
        head = consumer.__dict__.get("_drift_last_committed", {}).get(tp)
    acked = private.acked_offsets(consumer, tp)
    if head is None or not acked or min(acked) <= head:
        return False
    return not private.in_gap(consumer, tp, head)

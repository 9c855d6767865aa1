"""Postgres sinks: batch records from an output topic into the database, idempotently.

A batch is written with ``ON CONFLICT DO NOTHING`` on its natural key, so a redelivered record never makes a
duplicate row. A failing database stalls the sink (retrying with backoff) rather than dropping records;
a record that cannot be decoded is logged and skipped (the gate produced it, so it is a bug, not input).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Literal

from engine.errors import PayloadError, ServiceError
from streams.payloads import CorrectionLog, Message, decode

if TYPE_CHECKING:
    from streams.app import Runtime

log = logging.getLogger(__name__)
BATCH = 500
WITHIN_S = 0.05


async def run_sink(rt: Runtime, stream: Any, table: Literal["correction_logs", "run_messages"]) -> None:
    model: type[CorrectionLog] | type[Message] = CorrectionLog if table == "correction_logs" else Message
    async for values in stream.take(BATCH, within=WITHIN_S):
        records = []
        for raw in values:
            try:
                records.append(decode(model, raw))
            except PayloadError as exc:
                log.warning("%s sink skipped a record: %s", table, exc)
        await rt.store_ready.wait()
        await _write_with_retry(rt, table, records)


async def _write_with_retry(rt: Runtime, table: str, records: list[Any]) -> None:
    delay = 0.1
    while True:
        store = rt.store
        assert store is not None
        try:
            if table == "correction_logs":
                await store.write_correction_logs(records)
            else:
                await store.write_messages(records)
            return
        except (OSError, ServiceError, ConnectionError) as exc:
            log.warning("%s sink: database write failed (%s); retrying in %.1fs", table, exc, delay)
        except Exception as exc:
            if type(exc).__module__.startswith("asyncpg"):
                log.warning("%s sink: database error (%s); retrying in %.1fs", table, exc, delay)
            else:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)

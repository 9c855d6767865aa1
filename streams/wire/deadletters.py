"""Dead letters that always fit: a bad record, however large, becomes a ``dlq`` record far below the producer's
1 MiB request limit (value cut to :data:`~streams.wire.payloads.DEAD_LETTER_RAW_BYTES` with its full size and sha256,
key and reason cut too), so dead-lettering can never be what stops a worker.
"""

from __future__ import annotations

import base64
import hashlib

from streams.wire.payloads import (
    DEAD_LETTER_ERROR_CHARS,
    DEAD_LETTER_KEY_CHARS,
    DEAD_LETTER_RAW_BYTES,
    DeadLetter,
    encode,
)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def record_letter(
    topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, reason: str
) -> tuple[bytes, bytes]:
    """The (record key, value) of the dead letter for one record that could not be processed."""
    raw = value or b""
    text_key = None if key is None else _cut(key.decode("utf-8", "replace"), DEAD_LETTER_KEY_CHARS)
    letter = DeadLetter(
        source_topic=topic,
        partition=partition,
        offset=offset,
        key=text_key,
        error=_cut(reason, DEAD_LETTER_ERROR_CHARS),
        raw=base64.b64encode(raw[:DEAD_LETTER_RAW_BYTES]).decode(),
        raw_size=len(raw),
        raw_sha256=hashlib.sha256(raw).hexdigest(),
        raw_truncated=len(raw) > DEAD_LETTER_RAW_BYTES,
    )
    return (key or b"")[:DEAD_LETTER_KEY_CHARS], encode(letter)


def batch_letter(topic: str, partition: int, first: int, last: int, reason: str) -> tuple[bytes, bytes]:
    """The dead letter for a record batch that could not be decoded: what is known is where it was and why."""
    letter = DeadLetter(
        source_topic=topic,
        partition=partition,
        offset=first,
        last_offset=last,
        error=_cut(reason, DEAD_LETTER_ERROR_CHARS),
        raw="",
    )
    return b"", encode(letter)

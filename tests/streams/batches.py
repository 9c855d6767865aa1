"""Kafka record batches built by hand for tests: good ones, and gzip batches whose compressed data is broken (with
a correct CRC, so only decompression can fail, as with a codec the consumer cannot decode)."""

from __future__ import annotations

import struct

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.util import calc_crc32c

GZIP = 1
RECORDS_START = 61  # size of the v2 batch header
CRC_AT, ATTRIBUTES_AT = 17, 21


def batch(base_offset: int, values: list[bytes], *, codec: int = 0, key: bytes = b"k") -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 20)
    for n, value in enumerate(values):
        builder.append(n, timestamp=None, key=key, value=value, headers=[])
    raw = bytearray(builder.build())
    raw[0:8] = struct.pack(">q", base_offset)  # the base offset is outside the CRC
    return bytes(raw)


def broken_gzip(raw: bytes) -> bytes:
    """``raw`` (a gzip batch) with its compressed records overwritten past the gzip header, CRC recomputed."""
    data = bytearray(raw)
    start = RECORDS_START + 10
    data[start:] = bytes((b ^ 0x5A) for b in data[start:])
    data[CRC_AT:ATTRIBUTES_AT] = struct.pack(">I", calc_crc32c(bytes(data[ATTRIBUTES_AT:])))
    return bytes(data)

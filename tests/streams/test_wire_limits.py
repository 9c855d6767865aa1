"""Issue 20 (points 2 and 4): strict wire payloads, the maximum record size, dead letters that always fit."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest

from engine.errors import PayloadError
from streams.wire.deadletters import batch_letter, record_letter
from streams.wire.payloads import (
    DEAD_LETTER_RAW_BYTES,
    MAX_RECORD_BYTES,
    Draft,
    EvaluationRequest,
    Message,
    Step,
    Verdict,
    decode,
)

PRODUCER_MAX_REQUEST = 1024 * 1024  # aiokafka's default max_request_size
BASE = {"draft_id": "d1", "agent_id": "jim", "text": "hello"}


def draft(**changes: object) -> bytes:
    return orjson.dumps({**BASE, **changes})


@pytest.mark.parametrize("attempt", [True, "2", 2.0, None])
def test_an_attempt_must_be_a_json_integer(attempt: object) -> None:
    with pytest.raises(PayloadError, match="attempt"):
        decode(Draft, draft(attempt=attempt))


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (Draft, {**BASE, "text": 5}, "text"),
        (Draft, {**BASE, "agent_id": 7}, "agent_id"),
        (Draft, {**BASE, "sent_at": 1700000000}, "sent_at"),  # a timestamp is an RFC 3339 string
        (Step, {"run_id": "r", "step": "3"}, "step"),
        (Step, {"run_id": "r", "step": False}, "step"),
        (EvaluationRequest, {"request_id": "q", "agent_id": "a", "message_count": "5"}, "message_count"),
        (Message, {"message_id": "m", "agent_id": "a", "text": "t", "kind": 1}, "kind"),
    ],
)
def test_inbound_payloads_are_not_coerced(model: type, body: dict[str, object], field: str) -> None:
    with pytest.raises(PayloadError, match=field):
        decode(model, orjson.dumps(body))


def test_well_typed_payloads_still_decode_with_rfc3339_timestamps_and_unknown_fields() -> None:
    parsed = decode(Draft, draft(attempt=2, sent_at="2026-11-23T10:00:00Z", future_field=[1]))
    assert parsed.attempt == 2 and parsed.sent_at is not None and parsed.sent_at.year == 2026


def test_a_record_over_the_maximum_is_refused_before_it_is_parsed() -> None:
    at_limit = draft(persona="p" * (MAX_RECORD_BYTES - len(draft(persona=""))))
    assert len(at_limit) == MAX_RECORD_BYTES and decode(Draft, at_limit).persona
    too_large = b"{" + b" " * MAX_RECORD_BYTES + b"not even json"
    with pytest.raises(PayloadError, match=r"^record too large: 262158 bytes \(the maximum is 262144\)$"):
        decode(Draft, too_large)


def test_outbound_payloads_have_no_record_limit() -> None:
    verdict = {"draft_id": "d", "attempt": 1, "agent_id": "a", "decision": "commit", "outcome": "passed",
               "text": "t", "feedback": "f" * (MAX_RECORD_BYTES + 1)}  # fmt: skip
    assert decode(Verdict, orjson.dumps(verdict)).feedback


def test_a_dead_letter_keeps_a_cut_value_with_the_original_size_and_sha256() -> None:
    value = b"x" * 10_000_000
    key, letter = record_letter("drafts", 2, 41, b"jim", value, "record too large: ...")
    body = orjson.loads(letter)
    assert key == b"jim" and (body["partition"], body["offset"], body["key"]) == (2, 41, "jim")
    assert base64.b64decode(body["raw"]) == value[:DEAD_LETTER_RAW_BYTES]
    assert (body["raw_size"], body["raw_truncated"]) == (10_000_000, True)
    assert body["raw_sha256"] == hashlib.sha256(value).hexdigest()


def test_a_small_value_is_kept_whole() -> None:
    _, letter = record_letter("drafts", 0, 1, None, b'{"oops"', "not valid JSON")
    body = orjson.loads(letter)
    assert base64.b64decode(body["raw"]) == b'{"oops"' and body["raw_truncated"] is False and body["key"] is None


def test_the_largest_possible_dead_letter_fits_the_producer_request_limit() -> None:
    huge = b"\xff" * 10_000_000
    key, letter = record_letter("x" * 249, 2**31, 2**62, huge, huge, "\U0001f4a5" * 10**6)
    assert len(key) + len(letter) < PRODUCER_MAX_REQUEST // 4  # headroom for the record and batch headers


def test_an_undecodable_batch_letter_names_its_offsets() -> None:
    _, letter = batch_letter("drafts", 1, 10, 14, "undecodable record batch: zlib.error: ...")
    body = orjson.loads(letter)
    assert (body["offset"], body["last_offset"], body["raw"]) == (10, 14, "")


def test_an_agent_config_record_is_strict_down_to_the_configuration() -> None:
    from streams.worker.app import config_change

    good = {"agent_id": "jim", "config": {"gate_adherence_enabled": True, "gate_adherence_threshold": 6}}
    agent, config = config_change(orjson.dumps(good))
    assert agent == "jim" and config.gate_adherence_enabled and config.gate_adherence_threshold == 6.0
    for bad in ({"gate_adherence_enabled": "true"}, {"gate_adherence_enabled": 1}, {"max_correction_attempts": "2"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            config_change(orjson.dumps({"agent_id": "jim", "config": bad}))

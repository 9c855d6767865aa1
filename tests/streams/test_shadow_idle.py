"""With no running shadow the shadow lane does not decode the drafts it reads: it consumes every draft beside the
gate, and decoding them was about a tenth of the worker's event loop at the algorithmic gate's throughput."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.settings import Settings
from engine.shadow import Shadow, ShadowStatus
from streams.services import shadow as lane
from streams.services.shadow import Record, ShadowCache, ShadowService
from tests.spies import calls_of


def _service(cache: ShadowCache) -> ShadowService:
    async def no_store() -> Any:
        raise AssertionError("no store")

    return ShadowService(Settings(), no_store, cache, judge=None, send=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", [None, ShadowStatus.STOPPED])
def test_drafts_are_not_decoded_while_no_shadow_runs(monkeypatch: pytest.MonkeyPatch, status: Any) -> None:
    decoded = calls_of(monkeypatch, lane, "decode")
    cache = ShadowCache()
    if status is not None:
        cache.replace([Shadow("strict", "*", sample=1.0, status=status)])
    value = orjson.dumps({"draft_id": "d1", "agent_id": "michael", "text": "hi"})
    assert _service(cache)._samples(Record("drafts", 0, 1, 0, value)) == []
    assert decoded == []


def test_a_running_shadow_decodes_and_samples_them(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ShadowCache()
    cache.replace([Shadow("strict", "*", sample=1.0)])
    value = orjson.dumps({"draft_id": "d1", "agent_id": "michael", "text": "hi"})
    samples = _service(cache)._samples(Record("drafts", 0, 1, 0, value))
    assert [(s.shadow.name, s.draft.draft_id) for s in samples] == [("strict", "d1")]

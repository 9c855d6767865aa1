"""The worker runner's process set-up."""

from __future__ import annotations

import gc

from streams.worker.runner import GC_GEN0_THRESHOLD, _tune_gc


def test_the_start_up_heap_is_frozen_and_young_collections_are_rarer() -> None:
    before = gc.get_threshold()
    try:
        _tune_gc()
        assert gc.get_freeze_count() > 0  # objects alive at start-up are out of the collector's way
        assert gc.get_threshold() == (GC_GEN0_THRESHOLD, before[1], before[2])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

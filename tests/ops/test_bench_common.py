"""The benchmarks' reading of a process's CPU time (the LLM gate reports its worker's CPU per judged draft)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops.bench.common import process_cpu_s

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def test_a_process_cpu_time_grows_with_the_work_it_does() -> None:
    before = process_cpu_s(os.getpid())
    total = sum(i * i for i in range(3_000_000))  # ~0.2 s of CPU
    after = process_cpu_s(os.getpid())
    assert total > 0 and before is not None and after is not None
    assert after - before >= 0.05


def test_a_process_that_is_gone_has_no_cpu_time() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_cpu_s(child.pid) is None

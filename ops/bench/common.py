"""Shared helpers for benchmarks: the results file and a description of the machine that produced it."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

RESULTS_PATH = Path(__file__).resolve().parent / "results.json"


def merge_results(path: Path, new: dict[str, Any]) -> None:
    """Update the JSON object in ``path`` with ``new`` (creating it if needed); sorted keys, indent 2.

    The file is replaced atomically, so a reader never sees half of it.
    """
    current: dict[str, Any] = {}
    if path.exists():
        loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
        if not isinstance(loaded, dict):
            raise ValueError(f"{path} must hold a JSON object, found {type(loaded).__name__}")
        current = loaded
    current.update(new)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.write_text(json.dumps(current, sort_keys=True, indent=2) + "\n", encoding="utf-8")
    scratch.replace(path)


def process_cpu_s(pid: int) -> float | None:
    """CPU time (user + system, seconds) a running process has used so far, from ``/proc``; None where there is
    no ``/proc`` or the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_info() -> dict[str, str | int]:
    """CPU model, logical core count, Python version and platform string."""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count() or 0,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


async def create_topics_named(broker: str, names: list[str], partitions: int = 3) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=broker)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1) for name in names])
    finally:
        await admin.close()

"""Helpers for the ``drift tail/replay/stats`` tests: config files, recorded traffic, running ``drift``.

The end-to-end traffic has three phases on a control gate (early, window, late), plus one invalid and one
mis-keyed draft inside the window; a second database serves the treatment gate that judges the replayed window.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer

from streams.client import GateClient
from tests.stack import DRIFT, Scenario

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"config-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    return path


RULES = """
default: 9
rules:
  - proposition: "adherence-[gb]*"
    value: 0
  - proposition: "adherence-[mv]*"
    message_contains: "monotone"
    value: 1
    reasoning: "reads like a memo, not like this person"
"""


@dataclass
class Traffic:
    control: Scenario
    treatment: Scenario
    treatment_db: str
    agents: tuple[str, str]
    since: datetime
    until: datetime
    early: list[str] = field(default_factory=list)
    window: dict[str, str] = field(default_factory=dict)  # draft id -> text
    late: list[str] = field(default_factory=list)


async def record_traffic(traffic: Traffic) -> None:
    """Three phases of control traffic (early, window, late), with one invalid and one mis-keyed record."""
    x, y = traffic.agents
    async with GateClient(settings=traffic.control.settings, timeout_s=20) as gate:
        for i in range(2):
            traffic.early.append((await gate.check(agent_id=x, text=f"early note {i}")).draft_id)
        await asyncio.sleep(1.2)
        traffic.since = datetime.now(UTC)
        texts = [
            (x, "a monotone memo"), (x, "I am Beyoncé, always"), (x, "another monotone memo"),
            (y, "a monotone reply"), (y, "Bears. Beets. Battlestar Galactica."), (y, "one more monotone reply"),
        ]  # fmt: skip
        verdicts = await asyncio.gather(*(gate.check(agent_id=a, text=t) for a, t in texts))
        traffic.window = {v.draft_id: t for v, (_, t) in zip(verdicts, texts, strict=True)}
        producer = AIOKafkaProducer(bootstrap_servers=traffic.control.settings.broker)
        await producer.start()
        try:
            topic = traffic.control.settings.topic("drafts")
            await producer.send_and_wait(topic, b"not a draft", key=x.encode())
            await producer.send_and_wait(topic, orjson.dumps({"draft_id": "k", "agent_id": x, "text": "hi"}), key=b"z")
        finally:
            await producer.stop()
        await asyncio.sleep(1.2)
        traffic.until = datetime.now(UTC)
        traffic.late.append((await gate.check(agent_id=y, text="late note")).draft_id)


def drift(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``drift *args`` and capture its output as text."""
    return subprocess.run([DRIFT, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def wait_for_stderr(process: subprocess.Popen[str], text: str, timeout_s: float = 20.0) -> str:
    """Read the process's stderr until ``text`` shows up (failing the test after ``timeout_s``)."""
    assert process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + timeout_s
    while text not in seen and time.monotonic() < deadline and process.poll() is None:
        if selector.select(timeout=0.2):
            seen += os.read(process.stderr.fileno(), 4096).decode(errors="replace")
    assert text in seen, f"never saw {text!r}; stderr so far: {seen!r}"
    return seen

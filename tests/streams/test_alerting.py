"""The drift monitor's surroundings without a stack: bad monitor keys and anchor files are refused in one line,
and the alert webhook posts Slack-compatible JSON off the monitor's path without ever logging its URL."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from engine.config_changes import validated_change
from engine.errors import ConfigurationError
from engine.models import AgentConfig
from engine.settings import Settings
from streams.services.alerting import AlertCounts, Webhook
from streams.services.anchors import check_anchor_file
from streams.wire.payloads import Alert


@pytest.mark.parametrize(
    ("changes", "key"),
    [({"monitor_alpha": 2}, "monitor_alpha"), ({"monitor_alpha": 0}, "monitor_alpha"),
     ({"monitor_min_shift": -1}, "monitor_min_shift"), ({"monitor_reference": "median"}, "monitor_reference")],
)  # fmt: skip
def test_out_of_range_monitor_keys_are_refused_in_one_line(changes: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigurationError, match=key) as raised:
        validated_change("michael", AgentConfig(), changes)
    assert "\n" not in str(raised.value)


def test_an_anchor_file_that_does_not_parse_is_one_line_with_its_place(tmp_path: Path) -> None:
    anchors = tmp_path / "anchors.jsonl"
    anchors.write_text('{"agent_id": "dwight", "dimension": "adherence", "text": "x", "label": 8}\n{not json\n')
    with pytest.raises(ConfigurationError, match=rf"DRIFT_MONITOR_ANCHORS: .*{anchors.name}:2"):
        check_anchor_file(Settings(monitor_anchors=str(anchors)))
    check_anchor_file(Settings())  # no anchor file: nothing to check


def _alert(i: int = 0) -> Alert:
    return Alert(alert_id=f"a{i}", agent_id="michael", dimension="adherence", source="gate", cause="agent",
                 direction="drop", reference=8.0, recent_mean=3.1, evidence=4.8, alpha=0.01, min_shift=1.0,
                 observation=60)  # fmt: skip


async def _server(status: int, seen: list[Any]) -> tuple[web.AppRunner, str]:
    async def hook(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.Response(status=status)

    app = web.Application()
    app.router.add_post("/secret-token-path", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/secret-token-path"


async def test_the_webhook_posts_each_alert_with_a_text_field() -> None:
    seen: list[Any] = []
    runner, url = await _server(200, seen)
    hook = Webhook(url, AlertCounts())
    task = asyncio.create_task(hook.run())
    try:
        hook.offer(_alert())
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await runner.cleanup()
    assert seen and seen[0]["alert"]["alert_id"] == "a0"
    assert "michael adherence (gate) drop from 8.00 to about 3.10; cause agent" in seen[0]["text"]


async def test_a_failing_webhook_never_logs_its_url_and_a_full_queue_drops(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Any] = []
    runner, url = await _server(500, seen)
    counts = AlertCounts()
    hook = Webhook(url, counts)
    with caplog.at_level(logging.WARNING):
        for i in range(101):  # one more than the queue holds, before anything drains it
            hook.offer(_alert(i))
        assert counts.webhook_dropped == 1
        task = asyncio.create_task(hook.run())
        try:
            for _ in range(200):
                if any("not posted after 3 tries" in r.getMessage() for r in caplog.records):
                    break
                await asyncio.sleep(0.05)
        finally:
            task.cancel()
            await runner.cleanup()
    messages = [r.getMessage() for r in caplog.records]
    assert any("not posted after 3 tries (HTTP 500)" in m for m in messages)
    assert len(seen) >= 3 and json.dumps(messages).count("secret-token-path") == 0

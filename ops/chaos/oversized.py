"""Scenario e: oversized records between ordinary drafts — 700 KB of valid JSON, 900 KB that is not JSON and
10 MB, sent by a producer whose request limit (16 MB) lets them through to the broker.

Each is larger than the maximum record (256 KiB): it must be dead-lettered as ``record too large`` without being
parsed, in a dead letter that fits the worker's own producer (before issue 20, the 10 MB and 900 KB records gave a
dead letter larger than 1 MiB: the worker died on it, and again on every restart). The worker stays up and the
drafts after each of them get verdicts.
"""

from __future__ import annotations

from ops.chaos.common import Figures, Stage
from ops.chaos.wire import Record, deaths, draft, letters, one_worker, send_in_order, verdicts_by_id

OVERSIZED = ("700 KB of JSON", "900 KB not JSON", "10 MB of JSON")


def records(stage: Stage, agent: str, ordinary: int) -> tuple[list[Record], set[str]]:
    """``ordinary`` drafts before, between and after the three oversized records; the ordinary draft ids."""
    run = f"{stage.prefix}run"
    big: list[Record] = [
        draft(run, f"{run}-big0", agent, "x" * 700_000),
        (agent.encode(), bytes(range(256)) * 3600),  # 921,600 bytes that are not UTF-8 JSON
        draft(run, f"{run}-big2", agent, "y" * 10_000_000),
    ]
    out: list[Record] = []
    ids: set[str] = set()
    for n in range(ordinary):
        out.append(draft(run, f"{run}-{n}", agent))
        ids.add(f"{run}-{n}")
        if n % (ordinary // 4) == ordinary // 4 - 1 and big:
            out.append(big.pop(0))
    return out, ids


async def run(stage: Stage, *, ordinary: int = 40) -> Figures:
    agent = f"{stage.prefix}oscar"
    sent, ids = records(stage, agent, ordinary)
    async with one_worker(stage, [agent]):
        await send_in_order(stage, sent, max_request_size=16 * 1024 * 1024)
        verdicts = await verdicts_by_id(stage, ids)
        dead = await letters(stage, len(OVERSIZED))
    too_large = [d for d in dead if d["error"].startswith("record too large")]
    largest_letter = max((len(d.get("raw", "")) for d in dead), default=0)
    last = f"{stage.prefix}run-{ordinary - 1}"
    died = deaths(stage)
    return {
        "ordinary drafts sent": len(ids),
        "oversized records sent": ", ".join(OVERSIZED),
        "ordinary drafts verdicted": len(ids & set(verdicts)),
        "verdicts for oversized records": len(set(verdicts) - ids),
        "dead letters": len(dead),
        "dead letters 'record too large'": len(too_large),
        "largest dead letter raw (base64 chars)": largest_letter,
        "last draft (after the 10 MB one) verdicted": int(last in verdicts),
        "worker deaths": died,
        "ok": int(len(too_large) == len(dead) == len(OVERSIZED) and ids <= set(verdicts) and died == 0
                  and not set(verdicts) - ids),
    }  # fmt: skip

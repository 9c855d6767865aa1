"""Scenario g: payloads that the published JSON Schemas refuse, between valid drafts — ``"attempt": true``,
``"attempt": "2"``, ``"attempt": 2.0`` and a NUL character in the text.

Before issue 20, pydantic's lax mode coerced the first three into an attempt number and gave them verdicts.
Each must be dead-lettered with its reason and get no verdict; its valid neighbours (the draft before and after
each, same agent, same partition) get theirs.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from ops.chaos.common import Figures, Stage
from ops.chaos.wire import Record, deaths, draft, letters, one_worker, send_in_order, verdicts_by_id

#: name -> (the payload's fields, what the dead letter's reason says)
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "attempt true": ({"attempt": True}, "invalid Draft: attempt: Input should be a valid integer"),
    'attempt "2"': ({"attempt": "2"}, "invalid Draft: attempt: Input should be a valid integer"),
    "attempt 2.0": ({"attempt": 2.0}, "invalid Draft: attempt: Input should be a valid integer"),
    "NUL in text": ({"text": "half\u0000way"}, "text holds a NUL character"),
}


def records(stage: Stage, agent: str, rounds: int) -> tuple[list[Record], set[str], dict[str, str]]:
    """Each bad payload ``rounds`` times, a valid draft before and after each; (records, valid ids, bad id ->
    name of its fault)."""
    run = f"{stage.prefix}run"
    out: list[Record] = []
    valid: set[str] = set()
    bad: dict[str, str] = {}
    for r in range(rounds):
        for n, (name, (fields, _)) in enumerate(BAD.items()):
            good_id, bad_id = f"{run}-ok{r}.{n}", f"{run}-bad{r}.{n}"
            out += [draft(run, good_id, agent), draft(run, bad_id, agent, **fields)]
            valid.add(good_id)
            bad[bad_id] = name
    last = f"{run}-last"
    return [*out, draft(run, last, agent)], valid | {last}, bad


def explained(dead: list[dict[str, Any]], bad: dict[str, str]) -> dict[str, list[str]]:
    """Per fault, the reasons of the dead letters of its records that say what the fault is."""
    found: dict[str, list[str]] = {name: [] for name in BAD}
    for letter in dead:
        name = bad.get(str(orjson.loads(base64.b64decode(letter["raw"])).get("draft_id")), "")
        if name and BAD[name][1] in letter["error"]:
            found[name].append(letter["error"])
    return found


async def run(stage: Stage, *, rounds: int = 5) -> Figures:
    agent = f"{stage.prefix}stanley"
    sent, valid, bad = records(stage, agent, rounds)
    async with one_worker(stage, [agent]):
        await send_in_order(stage, sent)
        verdicts = await verdicts_by_id(stage, valid)
        dead = await letters(stage, len(bad))
    reasons = explained(dead, bad)
    died = deaths(stage)
    figures: Figures = {"valid drafts sent": len(valid), "invalid payloads sent": len(bad)}
    for name, found in reasons.items():
        figures[f"{name}: dead letters"] = len(found)
        figures[f"{name}: reason"] = found[0][:100] if found else "none"
    figures |= {
        "dead letters in all": len(dead),
        "verdicts for invalid payloads": len(set(bad) & set(verdicts)),
        "valid drafts verdicted": len(valid & set(verdicts)),
        "worker deaths": died,
        "ok": int(all(len(found) == rounds for found in reasons.values()) and len(dead) == len(bad)
                  and not set(bad) & set(verdicts) and valid <= set(verdicts) and died == 0),
    }  # fmt: skip
    return figures

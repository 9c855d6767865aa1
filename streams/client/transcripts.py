"""A simulated session as files: the evaluation harness's conversation JSONL and, beside it, what ``drift eval
run --messages FILE --propositions FOLDER`` needs to judge it (the session agents' personas, links to the
proposition sets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from engine.models import Persona
from streams.client.simulate import SessionResult


def export_session(result: SessionResult, personas: dict[str, Persona], folder: Path, propositions: Path) -> Path:
    """``folder/<run id>.jsonl`` plus what ``drift eval run --messages FILE --propositions folder`` needs to
    judge adherence: each session agent's persona (``personas/<agent id>.yaml``) and links to the proposition
    sets of ``propositions``. Returns the JSONL path."""
    (folder / "personas").mkdir(parents=True, exist_ok=True)
    for agent in result.agents.values():
        spec = {**personas[agent.persona_id].spec(), "id": agent.agent_id}
        (folder / "personas" / f"{agent.agent_id}.yaml").write_text(
            yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
    for source in sorted(p for p in propositions.iterdir() if p.is_dir() and p.name not in {"personas", "baselines"}):
        link = folder / source.name
        if not link.exists():
            link.symlink_to(source.resolve(), target_is_directory=True)
    return export_jsonl(result, folder / f"{result.run_id}.jsonl")


def export_jsonl(result: SessionResult, path: Path) -> Path:
    """The session as the evaluation harness's conversation JSONL (``drift eval run --messages``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for event in result.events:
            row: dict[str, Any] = {"agent_id": event.agent_id, "agent_name": event.agent_name, "channel": event.channel,
                                   "kind": event.kind.value, "text": event.text}  # fmt: skip
            if event.source:
                row["source"] = event.source
            if event.ts:
                row["ts"] = event.ts.isoformat()
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path

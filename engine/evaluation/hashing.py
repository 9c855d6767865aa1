"""Content hashes: what a baseline was computed from, so a changed proposition set is detected as stale.

The hash covers the *merged* proposition set of one (agent, dimension) — settings and propositions, not
the file paths it came from — plus the persona when the set shows it to the judge. Canonical JSON
(sorted keys, no whitespace) makes it independent of YAML formatting, comments and key order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from engine.models import Event, Persona
from engine.propositions import PropositionSet


def _digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def content_hash(pset: PropositionSet, persona: Persona | None) -> str:
    """sha256 over the merged proposition set and, when the judge sees it, the persona."""
    payload: dict[str, Any] = {"propositions": pset.model_dump(mode="json", exclude={"sources", "agent_id"})}
    if pset.include_personas and persona is not None:
        payload["persona"] = persona.spec()  # the fields that are set: new optional fields leave old hashes alone
    return _digest(payload)


def combined_hash(hashes: Sequence[str]) -> str:
    """One hash over several content hashes (order-independent)."""
    return _digest(sorted(hashes))


def events_hash(events: Sequence[Event]) -> str:
    """sha256 of a conversation: recorded next to a baseline to tell whether the input changed."""
    return _digest([[e.agent_id, e.agent_name, e.kind.value, e.channel, e.source, e.text, e.ts] for e in events])

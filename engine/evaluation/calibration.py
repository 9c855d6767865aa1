"""Judge calibration: how well judge scores agree with human labels.

Label file (JSONL, one labelled item per line)::

    {"agent_id": "dwight", "dimension": "adherence", "text": "As Assistant Regional Manager ...", "label": 8}
    {"agent_id": "pam", "dimension": "consistency", "messages": ["first message", "later message"], "label": 3}
    {"agent_id": "jim", "dimension": "convergence",
     "messages": [{"agent_id": "jim", "agent_name": "Jim Halpert", "text": "..."},
                  {"agent_id": "pam", "agent_name": "Pam Beesly", "text": "..."}], "label": 6}

- ``agent_id``: the labelled agent (its persona and proposition files are used);
- ``dimension``: one of the 0-9 dimensions (``ideas_quantity`` is a count and is not calibrated here);
- ``text`` (one message of the agent) **or** ``messages``: a list of the agent's messages (strings, oldest
  first) or of conversation events (objects with the keys of a conversation line; the labelled agent must
  have at least one message). All messages of an item form one channel;
- ``label``: the human score, a whole number 0-9; ``id`` (optional) names the item in error messages.

Every item is scored with the dimension's proposition set like a trajectory. Per dimension the report
gives Spearman's rho (judge vs label; None when either side is constant) and Cohen's kappa with quadratic
weights (judge scores rounded to whole numbers), plus the mean absolute difference.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError, FileIssue
from engine.evaluation.messages import MessageFileError, event_from_record
from engine.evaluation.run import evaluate_agent
from engine.evaluation.scorers import DEFAULT_OPTIONS, ScoringOptions
from engine.judges.base import Judge
from engine.models import Dimension, Event, EventKind
from engine.personas import load_persona

CALIBRATION_CHANNEL = "calibration"
_CALIBRATED = tuple(d for d in Dimension if d is not Dimension.IDEAS_QUANTITY)


@dataclass(frozen=True, slots=True)
class LabelItem:
    line: int
    agent_id: str
    dimension: Dimension
    events: tuple[Event, ...]
    label: int


@dataclass(frozen=True, slots=True)
class DimensionCalibration:
    dimension: Dimension
    n: int
    spearman_rho: float | None
    kappa: float | None
    mean_abs_diff: float
    pairs: tuple[tuple[float, int], ...]  # (judge score, human label)


def _events(record: dict[str, Any], agent_id: str) -> tuple[Event, ...]:
    if ("text" in record) == ("messages" in record):
        raise ValueError("give exactly one of 'text' and 'messages'")
    raw = [record["text"]] if "text" in record else record["messages"]
    if not isinstance(raw, list) or not raw:
        raise ValueError("'messages' must be a non-empty list")
    events = []
    for entry in raw:
        if isinstance(entry, str):
            events.append(Event(agent_id, agent_id, entry, EventKind.ACTION, CALIBRATION_CHANNEL))
        else:
            event = event_from_record(entry)
            events.append(event if event.channel else _in_channel(event))
    if not any(e.kind is EventKind.ACTION and e.agent_id == agent_id for e in events):
        raise ValueError(f"no message of agent {agent_id!r} among the messages")
    return tuple(events)


def _in_channel(event: Event) -> Event:
    return Event(event.agent_id, event.agent_name, event.text, event.kind, CALIBRATION_CHANNEL, event.source, event.ts)


def parse_label(record: Any) -> tuple[str, Dimension, tuple[Event, ...], int]:
    if not isinstance(record, dict):
        raise ValueError("each line must be a JSON object")
    agent_id, dimension, label = record.get("agent_id"), record.get("dimension"), record.get("label")
    if not isinstance(agent_id, str) or not agent_id:
        raise ValueError("'agent_id' must be a non-empty string")
    if dimension not in {d.value for d in _CALIBRATED}:
        raise ValueError(f"'dimension' must be one of {', '.join(d.value for d in _CALIBRATED)}, not {dimension!r}")
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= 9:
        raise ValueError(f"'label' must be a whole number from 0 to 9, not {label!r}")
    return agent_id, Dimension(dimension), _events(record, agent_id), label


def read_labels(path: Path) -> tuple[LabelItem, ...]:
    """Every labelled item; any malformed line raises :class:`MessageFileError` listing all of them."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read the label file: {exc}") from None
    items: list[LabelItem] = []
    issues: list[FileIssue] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            agent_id, dimension, events, label = parse_label(json.loads(line))
        except json.JSONDecodeError as exc:
            issues.append(FileIssue(str(path), number, "", f"not valid JSON: {exc.msg}"))
        except ValueError as exc:  # includes the field errors of event_from_record
            issues.append(FileIssue(str(path), number, "", str(exc)))
        else:
            items.append(LabelItem(number, agent_id, dimension, events, label))
    if issues:
        raise MessageFileError(issues)
    if not items:
        raise ConfigurationError(f"{path}: the label file holds no item")
    return tuple(items)


def summarise(dimension: Dimension, pairs: Sequence[tuple[float, int]]) -> DimensionCalibration:
    judge_scores = [p[0] for p in pairs]
    labels = [p[1] for p in pairs]
    rho = kappa = None
    if len(pairs) >= 2:
        # numpy and scipy, here: a worker imports this module (for its anchors) but never summarises
        from engine.statistics import quadratic_weighted_kappa, spearman_rho

        value = spearman_rho(judge_scores, labels)
        rho = None if math.isnan(value) else value
        kappa = quadratic_weighted_kappa([min(9, max(0, round(s))) for s in judge_scores], labels)
    mad = sum(abs(s - lab) for s, lab in pairs) / len(pairs)
    return DimensionCalibration(dimension, len(pairs), rho, kappa, mad, tuple(pairs))


async def calibrate(
    judge: Judge, items: Sequence[LabelItem], propositions_dir: Path, options: ScoringOptions = DEFAULT_OPTIONS
) -> tuple[DimensionCalibration, ...]:
    """Score every item with ``judge`` and compare with its label, per dimension."""
    pairs: dict[Dimension, list[tuple[float, int]]] = {}
    for item in items:
        persona = load_persona(propositions_dir, item.agent_id)
        events = item.events
        if persona is not None:  # plain-text messages are named after the persona, as in a conversation
            events = tuple(replace(e, agent_name=persona.name) if e.agent_name == item.agent_id else e for e in events)
        evaluation = await evaluate_agent(
            judge, item.agent_id, events, [item.dimension], propositions_dir, persona=persona, options=options
        )
        pairs.setdefault(item.dimension, []).append((evaluation.run.score(item.dimension).score, item.label))
    return tuple(summarise(d, pairs[d]) for d in Dimension if d in pairs)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render_calibration(results: Sequence[DimensionCalibration], *, as_json: bool = False) -> str:
    """The calibration summary as a text table or as JSON."""
    if as_json:
        document = {
            r.dimension.value: {
                "n": r.n,
                "spearman_rho": r.spearman_rho,
                "quadratic_weighted_kappa": r.kappa,
                "mean_abs_diff": round(r.mean_abs_diff, 4),
                "pairs": [{"judge": round(s, 4), "label": lab} for s, lab in r.pairs],
            }
            for r in results
        }
        return json.dumps(document, indent=2) + "\n"
    lines = [f"{'dimension':<14} {'n':>4} {'rho':>7} {'kappa':>7} {'|diff|':>7}"]
    lines += [
        f"{r.dimension.value:<14} {r.n:>4} {_fmt(r.spearman_rho):>7} {_fmt(r.kappa):>7} {r.mean_abs_diff:>7.2f}"
        for r in results
    ]
    return "\n".join(lines) + "\n"

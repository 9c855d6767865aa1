"""``drift init DIR``: a new cast's starting tree — the bundled default propositions, one example persona with
its own adherence propositions, the interventions, and an empty baselines folder with instructions.

Only plain files are written; nothing is overwritten (a non-empty DIR is refused).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from engine.errors import ConfigurationError

EXAMPLE_AGENT = "alex"

_PERSONA = """\
# One persona per agent: the file name is the agent id. The judge reads every field.
id: alex
name: Alex Rivera
personality: >-
  Product manager who is upbeat, organised and a little impatient with long meetings.
style: >-
  Short, friendly messages with a clear next step; uses first names; rarely uses jargon.
beliefs:
  - Shipping something small this week beats planning something big forever.
behaviours:
  - Ends a discussion by proposing who does what next.
skills:
  - Turning vague requests into concrete tasks.
"""

_ADHERENCE = """\
# Propositions for one agent, merged onto adherence/_default.yaml (seed doc 000).
dimension: adherence
agent_id: alex
propositions:
  - id: alex-next-step
    claim: >-
      {{agent_name}} moves the conversation forward by proposing a concrete next step or owner.
    weight: 1.0
    recommendations_for_improvement: >-
      Close with who does what next, in one short sentence.
"""

_BASELINES = """\
Golden baselines live here, one JSON file per agent. Write them from a reference conversation with

    drift eval baseline --all --messages conversation.jsonl --propositions DIR --judge JUDGE

and compare later runs with `drift eval run` (same inputs). See the README, "Offline evaluation".
"""


def scaffold(target: Path, bundled: Path) -> list[Path]:
    """Write the starting tree into ``target`` (created); return the files written."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigurationError(f"{target} already exists and is not empty: choose a new folder")
    written: list[Path] = []
    for default in sorted(bundled.glob("*/_default.yaml")):
        written.append(_copy(default, target / default.parent.name / default.name))
    for intervention in sorted((bundled / "interventions").glob("*.yaml")):
        written.append(_copy(intervention, target / "interventions" / intervention.name))
    written.append(_write(target / "personas" / f"{EXAMPLE_AGENT}.yaml", _PERSONA))
    written.append(_write(target / "adherence" / f"{EXAMPLE_AGENT}.yaml", _ADHERENCE))
    written.append(_write(target / "baselines" / "README.txt", _BASELINES))
    return written


def _copy(source: Path, destination: Path) -> Path:
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, destination)
    return destination


def _write(destination: Path, text: str) -> Path:
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(text, encoding="utf-8")
    return destination

"""Factories shared by the evaluation tests: events, conversations, scripted judges, proposition trees."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.evaluation.messages import read_messages
from engine.judges.scripted import ScriptedJudge
from engine.models import Event, EventKind
from engine.settings import REPO_ROOT

SAMPLE_CONVERSATION = REPO_ROOT / "ops" / "examples" / "office_conversation.jsonl"
SAMPLE_RULES = REPO_ROOT / "ops" / "examples" / "judge_rules.yaml"
START = datetime(2025, 5, 12, 9, 0, tzinfo=UTC)

EventFactory = Callable[..., Event]
JudgeFactory = Callable[..., ScriptedJudge]
TreeFactory = Callable[..., Path]


@pytest.fixture
def make_event() -> EventFactory:
    """``make_event(agent, text, channel="#general", kind=ACTION, minute=0)``: names are capitalised ids."""

    def factory(
        agent_id: str,
        text: str,
        *,
        channel: str | None = "#general",
        kind: EventKind = EventKind.ACTION,
        source: str | None = None,
        minute: int = 0,
    ) -> Event:
        return Event(agent_id, agent_id.capitalize(), text, kind, channel, source, START + timedelta(minutes=minute))

    return factory


@pytest.fixture
def conversation(make_event: EventFactory) -> Callable[[Sequence[tuple[str, str]]], tuple[Event, ...]]:
    """A #general conversation from ``(agent_id, text)`` pairs, one minute apart."""

    def factory(lines: Sequence[tuple[str, str]], channel: str = "#general") -> tuple[Event, ...]:
        return tuple(make_event(a, t, channel=channel, minute=i) for i, (a, t) in enumerate(lines))

    return factory


@pytest.fixture
def sample_events() -> tuple[Event, ...]:
    return read_messages(SAMPLE_CONVERSATION).events


@pytest.fixture
def scripted() -> JudgeFactory:
    """``scripted(default=7, rules=[...], default_count=0)``: a scripted judge from inline rules."""

    def factory(default: int = 7, rules: Sequence[dict[str, Any]] = (), default_count: int = 0) -> ScriptedJudge:
        return ScriptedJudge.from_rules({"default": default, "default_count": default_count, "rules": list(rules)})

    return factory


@pytest.fixture
def sample_judge() -> ScriptedJudge:
    return ScriptedJudge.from_file(SAMPLE_RULES)


def _proposition(pid: str, **extra: Any) -> dict[str, Any]:
    return {"id": pid, "claim": f"{{{{agent_name}}}} claim {pid}", **extra}


@pytest.fixture
def proposition_tree(tmp_path: Path) -> TreeFactory:
    """A small propositions directory: two propositions per evaluation dimension and personas.

    ``proposition_tree(personas=("ann", "bob"), extra={"adherence": {...file overrides...}})``.
    """

    def factory(personas: Sequence[str] = ("ann", "bob"), extra: dict[str, dict[str, Any]] | None = None) -> Path:
        root = tmp_path / "propositions"
        files: dict[str, dict[str, Any]] = {
            "adherence": {"include_personas": True, "propositions": [_proposition("adh-a"), _proposition("adh-b")]},
            "consistency": {"include_personas": False, "propositions": [_proposition("con-a")]},
            "fluency": {"include_personas": False, "propositions": [_proposition("flu-a")]},
            "convergence": {
                "include_personas": False,
                "target_type": "environment",
                "propositions": [_proposition("cvg-a")],
            },
            "ideas_quantity": {
                "include_personas": False,
                "target_type": "environment",
                "propositions": [_proposition("ideas")],
            },
        }
        for dimension, overrides in (extra or {}).items():
            files[dimension] = {**files.get(dimension, {}), **overrides}
        for dimension, body in files.items():
            folder = root / dimension
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "_default.yaml").write_text(yaml.safe_dump({"dimension": dimension, **body}), encoding="utf-8")
        (root / "personas").mkdir(parents=True, exist_ok=True)
        for agent in personas:
            persona = {"id": agent, "name": agent.capitalize(), "personality": f"{agent} is careful."}
            (root / "personas" / f"{agent}.yaml").write_text(yaml.safe_dump(persona), encoding="utf-8")
        return root

    return factory


@pytest.fixture
def jsonl_file(tmp_path: Path) -> Callable[..., Path]:
    """``jsonl_file(records, name="conversation.jsonl")``: dicts are written as JSON, strings verbatim."""

    def factory(records: Sequence[dict[str, Any] | str], name: str = "conversation.jsonl") -> Path:
        path = tmp_path / name
        lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return factory

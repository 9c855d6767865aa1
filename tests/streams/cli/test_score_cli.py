"""`drift propositions score`: one message judged against an agent's merged set, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.models import Dimension
from engine.propositions import load_set
from engine.settings import BUNDLED_PROPOSITIONS
from streams.cli import app

RULES = """
default: 7
rules:
  - proposition: "michael-dry-and-factual"
    value: 8
"""


@pytest.fixture
def rules(tmp_path: Path) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    return f"scripted:{path}"


def test_score_prints_the_weighted_score_and_every_proposition(rules: str) -> None:
    result = CliRunner().invoke(
        app,
        ["propositions", "score", "--agent", "michael", "--dimension", "adherence", "--message",
         "Per the memo, the deliverables are due Friday.", "--judge", rules, "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["dimension"], data["agent_id"]) == ("adherence", "michael")
    merged = load_set(BUNDLED_PROPOSITIONS, Dimension.ADHERENCE, "michael")
    assert [p["id"] for p in data["propositions"]] == [p.id for p in merged.propositions]
    by_id = {p["id"]: p for p in data["propositions"]}
    dry = by_id["michael-dry-and-factual"]
    assert (dry["raw"], dry["score"]) == (8, 1.0)  # inverted: 9 - 8
    assert "Michael Scott" in dry["claim"] and "{{agent_name}}" not in dry["claim"]
    assert all({"id", "claim", "raw", "score", "weight", "skipped"} <= set(p) for p in data["propositions"])
    expected = sum(p["score"] * p["weight"] for p in data["propositions"]) / sum(
        p["weight"] for p in data["propositions"]
    )
    assert data["score"] == pytest.approx(expected, abs=1e-3)


def test_unknown_dimension_is_a_one_line_error() -> None:
    result = CliRunner().invoke(
        app, ["propositions", "score", "--agent", "michael", "--dimension", "adherance", "--message", "x"]
    )
    assert result.exit_code != 0
    assert "unknown dimension 'adherance'" in str(result.exception)

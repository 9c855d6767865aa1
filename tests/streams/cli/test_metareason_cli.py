"""``drift metareason validate|sample|run`` on the bundled Dwight family and small files."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from engine.actors.base import ActRequest, ActResult
from engine.settings import REPO_ROOT
from streams.cli.metareason import app

runner = CliRunner()
FAMILY = REPO_ROOT / "propositions" / "metareason" / "dwight-provocations.yaml"
EXAMPLES = REPO_ROOT / "ops" / "examples" / "metareason"
ANSWERS = EXAMPLES / "dwight-answers.jsonl"
JUDGE = EXAMPLES / "dwight-judge.yaml"


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DRIFT_DATABASE_URL", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_validate_exit_codes(tmp_path: Path) -> None:
    assert runner.invoke(app, ["validate", str(FAMILY)]).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("prompt_id: x\nprompt_template: '{{ y }}'\nschema: {}\noracles: {}\n")
    result = runner.invoke(app, ["validate", str(FAMILY), str(bad)])
    assert result.exit_code == 2
    assert result.stdout.startswith(f"ok  {FAMILY} (dwight_provocations: 5 axes, 3 oracles)")
    assert result.stderr.splitlines() == [
        f"{bad}:3: schema: at least one axis is required",
        f"{bad}:4: oracles: at least one oracle is required",
        f"{bad}:2: prompt_template: template variable 'y' is not an axis in schema (axes: none)",
    ]


def test_sample_jsonl_is_seeded(tmp_path: Path) -> None:
    first = runner.invoke(app, ["sample", str(FAMILY), "--n", "5", "--format", "jsonl"])
    assert first.exit_code == 0
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(lines) == 5 and set(lines[0]) == {"id", "params", "prompt"}
    assert set(lines[0]["params"]) == {"provocation", "tone", "channel", "speaker", "patience"}
    assert lines[0]["params"]["speaker"] in lines[0]["prompt"]
    assert runner.invoke(app, ["sample", str(FAMILY), "--n", "5", "--format", "jsonl"]).stdout == first.stdout


def test_the_bundled_recordings_cover_every_variant() -> None:
    sampled = {
        json.loads(x)["id"]
        for x in runner.invoke(app, ["sample", str(FAMILY), "--format", "jsonl"]).stdout.splitlines()
    }
    recorded = {orjson.loads(x)["id"] for x in ANSWERS.read_bytes().splitlines()}
    assert sampled == recorded and len(sampled) == 120


def test_run_the_offline_demo_as_json_with_a_journal(tmp_path: Path) -> None:
    out = tmp_path / "dwight.jsonl"
    args = ["run", str(FAMILY), "--target", f"recorded:{ANSWERS}", "--judge", f"scripted:{JUDGE}", "--format", "json"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["format"] == "metareason" and run["judge"] == "scripted:dwight-judge" and len(run["items"]) == 120
    in_character = run["summary"]["oracles"]["in_character"]
    broken = sum(1 for item in run["items"] if any(m in item["answer"] for m in ("As an AI", "no worries")))
    assert (in_character["k"], in_character["n"]) == (120 - broken, 120)
    weakest = min(in_character["by_axis"]["provocation"], key=lambda g: g["mean"])
    assert "AI chatbot" in weakest["value"]
    assert len(out.read_bytes().splitlines()) == 120
    assert json.loads((tmp_path / "dwight.jsonl.run.json").read_text())["run_id"] == run["run_id"]
    again = json.loads(runner.invoke(app, [*args, "--out", str(out)]).stdout)
    assert again["run_id"] == run["run_id"] and again["summary"]["resumed"] == 120


def test_run_table_output(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", str(FAMILY), "--target", f"recorded:{ANSWERS}", "--judge", f"scripted:{JUDGE}", "--n", "120"]
    )
    assert result.exit_code == 0, result.output
    assert "in_character" in result.stdout and "persona_confidence: observed" in result.stdout


def test_actor_targets_use_the_factory_and_the_persona(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[str, object]] = []

    class Echo:
        name = "echo-actor"

        async def act(self, request: ActRequest) -> ActResult:
            assert request.persona is not None and request.persona.name == "Dwight Schrute"
            return ActResult("Fact: bears eat beets. Schrute Farms.", self.name)

    def make_actor(spec: str, settings: object) -> Echo:
        built.append((spec, settings))
        return Echo()

    factory = types.ModuleType("engine.actors.factory")
    factory.make_actor = make_actor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "engine.actors.factory", factory)
    args = ["run", str(FAMILY), "--target", "actor:dwight", "--actor", "scripted", "--judge", f"scripted:{JUDGE}"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["target"] == "actor:dwight (echo-actor)" and [spec for spec, _ in built] == ["scripted"]
    assert run["summary"]["oracles"]["in_character"]["k"] == 120

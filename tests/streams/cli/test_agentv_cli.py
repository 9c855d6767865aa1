"""``drift agentv validate|run|compare`` on the bundled Office eval file: exit codes, outputs, the CI job."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml
from typer.testing import CliRunner, Result

from engine.actors.base import ActRequest, ActResult
from engine.settings import REPO_ROOT
from streams.cli.agentv import app

EXAMPLE = REPO_ROOT / "ops" / "examples" / "agentv"
EVAL = EXAMPLE / "office.eval.yaml"
ANSWERS = EXAMPLE / "office.answers.jsonl"
JUDGE = EXAMPLE / "office_judge.yaml"
RUN = ["run", str(EVAL), "--target", f"recorded:{ANSWERS}", "--judge", f"scripted:{JUDGE}"]
DRIFT = REPO_ROOT / ".venv" / "bin" / "drift"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_validate_reports_dialect_and_counts() -> None:
    result = invoke("validate", str(EVAL))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"ok  {EVAL}: dialect seed, 4 cases, 7 evaluators"


def test_validate_reads_4x_contents_whatever_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl.txt"
    path.write_text("tests:\n  - {id: t, criteria: c, input: hi}\n")
    result = invoke("validate", str(path))
    assert result.exit_code == 0
    assert "dialect 4.x, 1 cases" in result.stdout


def test_validate_fails_with_located_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("evalcases:\n  - id: c\n    expected_outcome: g\n")
    result = invoke("validate", str(path))
    assert result.exit_code == 2
    assert f"{path}:2: evalcases.0: case 'c' skipped: missing or invalid input_messages (or input)" in result.stderr


def test_the_bundled_eval_runs_out_of_the_box(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    result = invoke(*RUN, "--out", str(out), "--workers", "2")
    assert result.exit_code == 0, result.output
    assert "judge scripted:office_judge" in result.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["eval_id"] for r in records] == [
        "dwight-weekend-beets",
        "dwight-schedules-safety-meeting",
        "michael-makes-it-about-himself",
        "jim-deadpan",
    ]
    assert records[1]["evaluator_results"][0]["name"] == "booking-sequence"
    assert records[1]["evaluator_results"][0]["score"] == 1.0
    assert records[3]["score"] == pytest.approx(8 / 9)
    index = [json.loads(line) for line in (tmp_path / "results.index.jsonl").read_text().splitlines()]
    assert (index[0]["test_id"], index[0]["execution_status"]) == ("dwight-weekend-beets", "ok")


def test_json_and_junit_formats(tmp_path: Path) -> None:
    document = json.loads(invoke(*RUN, "--format", "json").stdout)
    assert document["summary"]["total"] == 4
    assert document["runs"][0]["format"] == "agentv"
    assert len(document["runs"][0]["items"]) == 4
    suite = ET.fromstring(invoke(*RUN, "--format", "junit").stdout)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "0")


def test_threshold_and_failing_cases_exit_1(tmp_path: Path) -> None:
    assert invoke(*RUN, "--threshold", "0.99").exit_code == 1
    assert invoke(*RUN, "--threshold", "0.9").exit_code == 0
    broken = tmp_path / "answers.jsonl"
    lines = ANSWERS.read_text().splitlines()
    broken.write_text(
        "\n".join([json.dumps({"id": "dwight-weekend-beets", "answer": "As an AI I have no weekend."}), *lines[1:]])
    )
    run = ["run", str(EVAL), "--target", f"recorded:{broken}", "--judge", f"scripted:{JUDGE}"]
    failed = invoke(*run)
    assert failed.exit_code == 1
    assert "dwight-weekend-beets             0.000  fail        rubric=0.00, no-ai-disclaimer=0.00" in failed.stdout
    assert invoke(*run, "--allow-failures").exit_code == 0


def test_eval_id_selects_cases() -> None:
    document = json.loads(invoke(*RUN, "--eval-id", "dwight-*", "--format", "json").stdout)
    assert [i["item_id"] for i in document["runs"][0]["items"]] == [
        "dwight-weekend-beets",
        "dwight-schedules-safety-meeting",
    ]


def test_compare_exits_1_on_a_mean_drop_beyond_the_threshold(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"eval_id": "x", "score": 0.9}\n{"eval_id": "y", "score": 0.8}\n')
    b.write_text('{"test_id": "x", "score": 0.6}\n{"eval_id": "y", "score": 0.8}\n')
    dropped = invoke("compare", str(a), str(b))
    assert dropped.exit_code == 1
    assert "x" in dropped.stdout and "loss" in dropped.stdout
    assert invoke("compare", str(a), str(b), "--threshold", "0.2").exit_code == 0
    assert json.loads(invoke("compare", str(a), str(b), "--format", "json").stdout)["counts"] == {
        "win": 0,
        "loss": 1,
        "tie": 1,
    }


@pytest.mark.skipif(not DRIFT.exists(), reason="needs the installed drift entry point")
def test_user_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    missing = subprocess.run([str(DRIFT), "agentv", "run", str(EVAL)], capture_output=True, text=True, check=False)
    assert missing.returncode == 2
    lines = missing.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drift: ") and "no target" in lines[0]


def test_actor_targets_use_the_factory_and_the_persona(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ActRequest] = []

    class Dwight:
        name = "fake-dwight"

        async def act(self, request: ActRequest) -> ActResult:
            seen.append(request)
            return ActResult("Beets. I am assistant regional manager at Schrute Farms.", self.name)

    def make_actor(spec: str, settings: object) -> Dwight:
        assert spec == "fake"
        return Dwight()

    factory = types.ModuleType("engine.actors.factory")
    factory.make_actor = make_actor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "engine.actors.factory", factory)
    out = tmp_path / "r.jsonl"
    result = invoke(
        "run",
        str(EVAL),
        "--target",
        "actor:dwight",
        "--actor",
        "fake",
        "--judge",
        f"scripted:{JUDGE}",
        "--eval-id",
        "dwight-weekend-beets",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["target"] == "actor:dwight (fake-dwight)"
    assert record["score"] == 1.0
    assert seen[0].persona is not None and seen[0].persona.id == "dwight"
    assert seen[0].stimulus == "Jim: Hey Dwight, do anything fun this weekend?"


def test_the_ci_workflow_runs_the_bundled_eval_beside_persona_regression() -> None:
    workflow = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / "persona-regression.yml").read_text())
    jobs = workflow["jobs"]
    assert "persona-regression" in jobs and "agentv" in jobs
    commands = " ".join(step.get("run", "") for step in jobs["agentv"]["steps"])
    assert "drift agentv run ops/examples/agentv/office.eval.yaml" in commands
    assert "--format junit" in commands


def test_validate_reads_jsonl_datasets(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "t", "criteria": "c", "input": "hi", "assertions": [{"type": "is-json"}]}\n')
    result = invoke("validate", str(path))
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ok  {path}: dialect 4.x, 1 cases, 1 evaluators"


def test_a_jsonl_dataset_takes_its_sidecars_defaults_and_a_case_its_own_target(tmp_path: Path) -> None:
    dataset = tmp_path / "cases.jsonl"
    dataset.write_text(
        '{"id": "a", "expected_outcome": "g", "input": "hi", "assertions": [{"type": "contains", "value": "beet"}]}\n'
        '{"id": "b", "expected_outcome": "g", "input": "yo", "evaluators": [{"type": "contains", "value": "beet"}],'
        f' "execution": {{"target": "recorded:{tmp_path / "second.jsonl"}"}}}}\n'
        '{"id": "c", "expected_outcome": "g", "input": "hey"}\n'
    )
    (tmp_path / "first.jsonl").write_text('{"id": "a", "answer": "beets"}\n{"id": "c", "answer": "beets"}\n')
    (tmp_path / "second.jsonl").write_text('{"id": "b", "answer": "no"}\n')
    sidecar = tmp_path / "cases.yaml"
    first = tmp_path / "first.jsonl"
    sidecar.write_text(f"dataset: office\nexecution:\n  target: recorded:{first}\nevaluator: llm_judge\n")
    checked = invoke("validate", str(dataset), str(sidecar))
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.splitlines() == [
        f"ok  {dataset}: dialect seed, 3 cases, 3 evaluators (1 the default llm_judge); defaults from cases.yaml",
        f"ok  {sidecar}: sidecar of {dataset}: dataset office, target recorded:{tmp_path / 'first.jsonl'}, "
        "evaluator llm_judge",
    ]
    ran = json.loads(invoke("run", str(dataset), "--judge", f"scripted:{JUDGE}", "--format", "json").stdout)
    answered = {item["item_id"]: (run["target"], item["score"]) for run in ran["runs"] for item in run["items"]}
    assert {k: v[1] for k, v in answered.items()} == {"a": 1.0, "b": 0.0, "c": pytest.approx(5 / 9)}
    assert answered["a"][0] == answered["c"][0] != answered["b"][0]


def test_a_sidecar_with_a_key_agentv_ignores_fails_validation_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "expected_outcome": "g", "input": "hi"}\n')
    sidecar = tmp_path / "cases.yaml"
    sidecar.write_text("dataset: office\nevaluators: []\n")
    result = invoke("validate", str(sidecar))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{sidecar}:2: evaluators: not read from a sidecar")


def test_validate_of_a_missing_file_is_one_line_from_main_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from streams.cli import main

    monkeypatch.setattr(sys, "argv", ["drift", "agentv", "validate", str(tmp_path / "gone.yaml")])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"drift: no such file: {tmp_path / 'gone.yaml'}"]

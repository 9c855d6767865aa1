"""``drift eval``: run / baseline / calibrate through the CLI, exit codes, formats, the CI workflow file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
import yaml
from typer.testing import CliRunner, Result

from engine.errors import ConfigurationError
from engine.evaluation.messages import MessageFileError, read_messages
from engine.evaluation.report import REPORT_MARKER
from engine.models import Event
from engine.settings import BUNDLED_PROPOSITIONS, REPO_ROOT
from streams.cli.eval import app

CONVERSATION = REPO_ROOT / "ops" / "examples" / "office_conversation.jsonl"
RULES = REPO_ROOT / "ops" / "examples" / "judge_rules.yaml"
LABELS = REPO_ROOT / "ops" / "examples" / "labels_sample.jsonl"
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "persona-regression.yml"
DRIFT = REPO_ROOT / ".venv" / "bin" / "drift"
CAST = ("michael", "dwight", "jim", "pam", "angela", "kevin", "oscar")
SCRIPTED = ["--messages", str(CONVERSATION), "--judge", f"scripted:{RULES}"]

Invoke = Callable[..., Result]


@pytest.fixture
def invoke() -> Invoke:
    runner = CliRunner()

    def call(*args: str) -> Result:
        return runner.invoke(app, list(args))

    return call


@pytest.fixture
def propositions_copy(tmp_path: Path) -> Path:
    """The bundled propositions without their baselines, in a scratch directory."""
    target = tmp_path / "propositions"
    shutil.copytree(BUNDLED_PROPOSITIONS, target, ignore=shutil.ignore_patterns("baselines"))
    return target


def _json(result: Result) -> dict[str, Any]:
    assert result.exit_code in (0, 1, 3), result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def test_the_shipped_baselines_match_the_sample_run(invoke: Invoke) -> None:
    result = invoke("run", *SCRIPTED, "--format", "json")
    document = _json(result)
    assert result.exit_code == 0
    assert set(document["agents"]) == set(CAST)
    assert all(
        set(dims) == {"adherence", "consistency", "fluency", "convergence", "ideas_quantity"}
        for dims in document["agents"].values()
    )
    assert document["stale"] == [], (
        "propositions/baselines is out of date: regenerate it with `drift eval baseline --messages "
        "ops/examples/office_conversation.jsonl --judge scripted:ops/examples/judge_rules.yaml "
        "--baseline-dir propositions/baselines`"
    )
    assert document["regressions"] == []
    scores = {(a, d): v["score"] for a, dims in document["agents"].items() for d, v in dims.items()}
    assert len({round(s, 2) for s in scores.values()}) >= 8  # the sample rules make scores differ
    assert scores[("dwight", "fluency")] < scores[("jim", "fluency")]  # Dwight repeats his title
    assert scores[("michael", "consistency")] < scores[("oscar", "consistency")]  # the jargon slip
    assert all(scores[(a, "ideas_quantity")] == 10.0 for a in CAST)
    dwight = {p["id"]: p for p in document["agents"]["dwight"]["adherence"]["propositions"]}
    # Dwight's set is hard: inverted first (9 - raw), then x0.8 below 9
    assert {k: dwight["dwight-easy-with-jim"][k] for k in ("raw", "score", "inverted", "hard")} == {
        "raw": 0,
        "score": 9.0,
        "inverted": True,
        "hard": True,
    }
    generic = dwight["adherence-generic-assistant"]
    assert generic["raw"] == 6 and generic["score"] == pytest.approx(2.4)  # JSON keeps the exact value
    assert dwight["adherence-voice-and-style"]["weight"] == 0.8


def test_regression_exits_one_with_a_markdown_table(invoke: Invoke, tmp_path: Path) -> None:
    rules = yaml.safe_load(RULES.read_text())
    rules["rules"].insert(0, {"proposition": "dwight-*", "value": 0, "reasoning": "out of character"})
    harsh = tmp_path / RULES.name  # same file name: the same judge as the baselines' (scripted:judge_rules)
    harsh.write_text(yaml.safe_dump(rules))
    report = tmp_path / "report.md"
    args = ["--messages", str(CONVERSATION), "--judge", f"scripted:{harsh}", "--agents", "dwight,kevin"]
    result = invoke("run", *args, "--format", "markdown", "--output", str(report))
    assert result.exit_code == 1
    text = report.read_text()
    assert text.startswith(REPORT_MARKER)
    assert "| Agent | Dimension | Baseline | Current | Δ | 95% CI of Δ | Verdict |" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith(("| dwight |", "| kevin |"))]
    verdicts = {(row[0][2:], row[1]): row[-1] for row in rows}
    assert len(verdicts) == 10
    assert verdicts[("dwight", "adherence")] == "❌ likely regression |"
    assert all(v == "✅ ok |" for k, v in verdicts.items() if k != ("dwight", "adherence"))
    dwight = next(row for row in rows if row[:2] == ["| dwight", "adherence"])
    assert float(dwight[4]) < -1.0  # the delta column
    assert "1 regression(s)" in result.stderr


def test_changed_propositions_are_reported_stale(invoke: Invoke, propositions_copy: Path) -> None:
    common = ["--agents", "kevin", "--propositions", str(propositions_copy), *SCRIPTED]
    assert invoke("baseline", *common).exit_code == 0
    fluency = propositions_copy / "fluency" / "_default.yaml"
    fluency.write_text(fluency.read_text().replace("weight: 0.8", "weight: 0.3"))
    result = invoke("run", *common, "--format", "json")
    assert result.exit_code == 3  # a stale dimension was not compared
    assert invoke("run", *common, "--allow-incomparable").exit_code == 0
    document = _json(result)
    assert document["stale"] == [{"agent_id": "kevin", "dimension": "fluency"}]
    assert document["agents"]["kevin"]["fluency"]["verdict"] == "stale"
    assert document["agents"]["kevin"]["adherence"]["verdict"] == "ok"
    assert any("stale" in note for note in document["notes"])
    assert invoke("run", *common, "--fail-on-stale").exit_code == 1


def test_junit_output_is_valid_xml(invoke: Invoke, tmp_path: Path) -> None:
    output = tmp_path / "report.xml"
    result = invoke("run", *SCRIPTED, "--agents", "pam,oscar", "--format", "junit", "--output", str(output))
    assert result.exit_code == 0
    root = ET.parse(output).getroot()
    assert [s.get("name") for s in root.findall("testsuite")] == ["pam", "oscar"]
    assert all(len(s.findall("testcase")) == 5 for s in root.findall("testsuite"))
    assert root.get("failures") == "0"


def test_repeats_report_the_test_retest_spread(invoke: Invoke) -> None:
    document = _json(invoke("run", *SCRIPTED, "--agents", "jim", "--repeats", "3", "--format", "json"))
    spread = document["agents"]["jim"]["adherence"]["spread"]
    assert spread["scores"] == pytest.approx([document["agents"]["jim"]["adherence"]["score"]] * 3)
    assert spread["sd"] == pytest.approx(0.0, abs=1e-9) and spread["range"] == pytest.approx(0.0, abs=1e-9)


def test_individual_strategy_makes_one_call_per_claim(invoke: Invoke, tmp_path: Path) -> None:
    cassette = tmp_path / "calls.jsonl"
    result = invoke(
        "run",
        *SCRIPTED,
        "--agents",
        "kevin",
        "--dimensions",
        "fluency",
        "--strategy",
        "individual",
        "--no-interval",
        "--record",
        str(cassette),
        "--format",
        "json",
    )
    assert result.exit_code == 0
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert len(lines) == 4 and all(len(line["request"]["claims"]) == 1 for line in lines)
    assert _json(result)["agents"]["kevin"]["fluency"]["interval"] is None


def test_malformed_conversations_stop_unless_skipped(invoke: Invoke, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    lines = CONVERSATION.read_text().splitlines()
    broken.write_text("\n".join([lines[0], "{oops", *lines[1:4], '{"agent_id": "jim"}']) + "\n")
    stopped = invoke("run", "--messages", str(broken), "--judge", f"scripted:{RULES}")
    assert isinstance(stopped.exception, MessageFileError)
    assert str(stopped.exception).splitlines() == [
        f"{broken}:2: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{broken}:6: text: required key is missing",
    ]
    skipped = invoke(
        "run",
        "--messages",
        str(broken),
        "--judge",
        f"scripted:{RULES}",
        "--skip-invalid",
        "--format",
        "json",
        "--no-interval",
        "--allow-incomparable",
    )
    assert skipped.exit_code == 0
    assert f"skipped {broken}:2:" in skipped.stderr and f"skipped {broken}:6:" in skipped.stderr
    assert set(_json(skipped)["agents"]) == {"michael", "dwight", "jim"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--judge", f"scripted:{RULES}"], "give exactly one input"),
        (["run", *SCRIPTED, "--synthetic", "2"], "give exactly one input"),
        (["run", *SCRIPTED, "--dimensions", "adherence,charisma"], "unknown dimension(s) charisma"),
        (["run", *SCRIPTED, "--agents", "toby"], "no message from agent(s) toby"),
        (["run", "--synthetic", "2", "--judge", f"scripted:{RULES}"], "--synthetic needs an LLM"),
        (["run", "--since", "last tuesday", "--judge", f"scripted:{RULES}"], "--since"),
        (["run", "--messages", "/nonexistent.jsonl", "--judge", "offline"], "no such conversation file"),
        (["run", *SCRIPTED[:2], "--judge", "scripted:/nonexistent.yaml"], "cannot read scripted judge rules"),
        (["calibrate", "--labels", str(LABELS), "--format", "junit"], "table or json"),
    ],
)
def test_user_errors_are_configuration_errors(invoke: Invoke, args: list[str], message: str) -> None:
    result = invoke(*args)
    assert isinstance(result.exception, ConfigurationError), result.output
    assert message in str(result.exception)


def test_bad_choices_are_usage_errors(invoke: Invoke) -> None:
    assert invoke("run", *SCRIPTED, "--format", "pdf").exit_code == 2
    assert invoke("run", *SCRIPTED, "--repeats", "0").exit_code == 2
    assert invoke("run", *SCRIPTED, "--strategy", "sometimes").exit_code == 2


def test_run_id_uses_the_postgres_message_source(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    import streams.store

    sample_events = read_messages(CONVERSATION).events
    calls: list[tuple[Any, ...]] = []

    class FakeSource:
        def __init__(self, url: str) -> None:
            calls.append(("init", url))

        async def events(
            self, agent_ids: Sequence[str] | None, run_id: str | None, since: datetime | None
        ) -> list[Event]:
            calls.append(("events", agent_ids, run_id, since))
            return list(sample_events)

    monkeypatch.setattr(streams.store, "PostgresMessageSource", FakeSource, raising=False)
    monkeypatch.setenv("DRIFT_DATABASE_URL", "postgresql://drift@db/drift")
    result = invoke(
        "run",
        "--run-id",
        "r-42",
        "--agents",
        "kevin",
        "--judge",
        f"scripted:{RULES}",
        "--format",
        "json",
        "--no-interval",
    )
    assert result.exit_code == 0, result.output
    assert calls == [("init", "postgresql://drift@db/drift"), ("events", ["kevin"], "r-42", None)]
    monkeypatch.delattr(streams.store, "PostgresMessageSource")
    missing = invoke("run", "--run-id", "r-42", "--judge", f"scripted:{RULES}")
    assert isinstance(missing.exception, ConfigurationError) and "PostgresMessageSource" in str(missing.exception)


def test_calibrate_prints_agreement_per_dimension(invoke: Invoke) -> None:
    result = invoke("calibrate", "--labels", str(LABELS), "--judge", f"scripted:{RULES}", "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert set(document) == {"adherence", "consistency", "fluency", "convergence"}
    assert document["adherence"]["n"] == 8 and document["adherence"]["spearman_rho"] > 0.5


def test_baseline_files_hold_hashes_and_unit_scores(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("baseline", *SCRIPTED, "--agents", "oscar", "--baseline-dir", str(tmp_path))
    assert result.exit_code == 0 and "oscar.json" in result.stdout
    document = json.loads((tmp_path / "oscar.json").read_text())
    assert document["agent_id"] == "oscar" and document["judge"] == "scripted:judge_rules"
    assert len(document["content_hash"]) == 64
    assert len(document["dimensions"]["adherence"]["units"]) == 4  # Oscar wrote four messages
    assert (
        document["dimensions"]["adherence"]
        == json.loads((BUNDLED_PROPOSITIONS / "baselines" / "oscar.json").read_text())["dimensions"]["adherence"]
    )


def test_drift_eval_run_in_scripted_mode_is_fast(tmp_path: Path) -> None:
    if not DRIFT.exists():
        pytest.skip("the drift entry point is not installed in .venv")
    report = tmp_path / "report.md"
    started = time.monotonic()
    completed = subprocess.run(
        [str(DRIFT), "eval", "run", *SCRIPTED, "--format", "markdown", "--output", str(report)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert completed.returncode == 0, completed.stderr
    assert elapsed < 60
    assert report.read_text().startswith(REPORT_MARKER)


def test_drift_reports_bad_lines_on_one_line_each_with_exit_two(tmp_path: Path) -> None:
    if not DRIFT.exists():
        pytest.skip("the drift entry point is not installed in .venv")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"agent_id": "ann", "text": "hi"}\nnot json\n')
    completed = subprocess.run(
        [str(DRIFT), "eval", "run", "--messages", str(broken), "--judge", f"scripted:{RULES}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    assert f"{broken}:2: not valid JSON" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_the_workflow_runs_the_scripted_eval_and_comments() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on` as a boolean
    assert "propositions/**" in triggers["pull_request"]["paths"]
    assert workflow["permissions"]["pull-requests"] == "write"
    job = workflow["jobs"]["persona-regression"]  # beside it: the agentv job (tests/streams/cli/test_agentv_cli.py)
    steps = job["steps"]
    python = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "3.11"
    assert any(s.get("run", "").strip() == "pip install -e ." for s in steps)
    evaluate = next(s for s in steps if "drift eval run" in s.get("run", ""))
    command = " ".join(evaluate["run"].split())
    assert "--messages ops/examples/office_conversation.jsonl" in command
    assert "--judge scripted:ops/examples/judge_rules.yaml" in command
    assert "--format markdown --output report.md" in command and "timeout 60" in command
    comment = next(s for s in steps if s.get("uses", "").startswith("actions/github-script"))
    assert REPORT_MARKER in comment["with"]["script"] and "updateComment" in comment["with"]["script"]
    assert steps.index(evaluate) < steps.index(comment)
    fail = steps[-1]
    assert fail["if"] == f"steps.{evaluate['id']}.outputs.exit_code == '1'" and "exit 1" in fail["run"]
    for path in ("ops/examples/office_conversation.jsonl", "ops/examples/judge_rules.yaml"):
        assert (REPO_ROOT / path).is_file()
    assert sys.version_info >= (3, 11)


def test_baseline_needs_named_agents_or_all(invoke: Invoke, propositions_copy: Path) -> None:
    common = ["--propositions", str(propositions_copy), *SCRIPTED]
    refused = invoke("baseline", *common)
    assert refused.exit_code != 0
    assert isinstance(refused.exception, ConfigurationError)
    assert "--agents a,b or --all" in str(refused.exception)
    assert not (propositions_copy / "baselines").exists()
    assert invoke("baseline", *common, "--all").exit_code == 0
    assert {p.stem for p in (propositions_copy / "baselines").glob("*.json")} == set(CAST)


def test_baseline_refuses_to_replace_another_judges_baseline(invoke: Invoke, propositions_copy: Path) -> None:
    common = ["--agents", "kevin", "--propositions", str(propositions_copy), "--messages", str(CONVERSATION)]
    assert invoke("baseline", *common, "--judge", f"scripted:{RULES}").exit_code == 0
    stored = (propositions_copy / "baselines" / "kevin.json").read_text()
    refused = invoke("baseline", *common, "--judge", "offline")
    assert isinstance(refused.exception, ConfigurationError)
    assert "pass --force" in str(refused.exception)
    assert (propositions_copy / "baselines" / "kevin.json").read_text() == stored
    assert invoke("baseline", *common, "--judge", "offline", "--force").exit_code == 0
    assert (propositions_copy / "baselines" / "kevin.json").read_text() != stored


def test_a_run_that_compares_nothing_has_its_own_exit_code(invoke: Invoke) -> None:
    other_judge = invoke("run", "--messages", str(CONVERSATION), "--judge", "offline", "--agents", "kevin")
    assert other_judge.exit_code == 3
    assert "not comparable" in other_judge.stderr
    allowed = ("run", "--messages", str(CONVERSATION), "--judge", "offline", "--agents", "kevin")
    assert invoke(*allowed, "--allow-incomparable").exit_code == 0


def test_a_baseline_of_another_conversation_is_not_a_regression(invoke: Invoke, tmp_path: Path) -> None:
    shorter = tmp_path / "shorter.jsonl"
    shorter.write_text("\n".join(CONVERSATION.read_text().splitlines()[:12]) + "\n")
    result = invoke("run", "--messages", str(shorter), "--judge", f"scripted:{RULES}", "--format", "json")
    document = _json(result)
    assert result.exit_code == 3
    verdicts = {d["verdict"] for dims in document["agents"].values() for d in dims.values()}
    assert verdicts <= {"other conversation", "no baseline"}
    assert "other conversation" in verdicts

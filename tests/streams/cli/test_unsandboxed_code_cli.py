"""Where the user-code sandbox cannot be had: a one-line refusal (exit 2), or with ``--allow-unsandboxed-code``
a run whose every output says so. The sandbox is made unavailable by a ``PATH`` without bubblewrap."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from typer.testing import CliRunner

from engine.formats import usercode
from engine.settings import REPO_ROOT
from streams.cli import app

PLEXUS = REPO_ROOT / "ops" / "examples" / "plexus"
CARD = str(PLEXUS / "persona_drift.yaml")  # has a LogicalClassifier
RULES = f"scripted:{PLEXUS / 'rules.yaml'}"
AGENTV = REPO_ROOT / "ops" / "examples" / "agentv"
EVAL = str(AGENTV / "office.eval.yaml")  # has a code judge
AGENTV_RUN = ["agentv", "run", EVAL, "--target", f"recorded:{AGENTV / 'office.answers.jsonl'}"]
AGENTV_RUN += ["--judge", f"scripted:{AGENTV / 'office_judge.yaml'}", "--allow-failures"]
DRIFT = REPO_ROOT / ".venv" / "bin" / "drift"
FLAG = "--allow-unsandboxed-code"
LABEL = "UNSANDBOXED user code (--allow-unsandboxed-code)"


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PATH", "/nonexistent")
    usercode._probe.cache_clear()  # the probe is remembered per process: forget it both ways
    yield
    usercode._probe.cache_clear()


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return 2, str(result.exception)
    return result.exit_code, result.stdout


def test_the_cli_refuses_code_in_one_line_with_exit_2(tmp_path: Path) -> None:
    item = ["--text", "Bears. Beets.", "--metadata", '{"agent": "dwight", "persona": "Dwight"}', "--model", RULES]
    done = subprocess.run(
        [str(DRIFT), "plexus", "predict", CARD, *item], env={"PATH": "/nonexistent", "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"drift: {CARD} runs code from a file, and the sandbox for it is unavailable here: ")
    assert "bubblewrap (bwrap) is not installed" in line and FLAG in line


@pytest.mark.usefixtures("no_sandbox")
def test_plexus_predict_runs_unsandboxed_only_when_allowed_and_says_so() -> None:
    item = ["--text", "Bears. Beets.", "--metadata", '{"agent": "dwight", "persona": "Dwight"}', "--model", RULES]
    code, message = invoke("plexus", "predict", CARD, *item)
    assert code == 2 and FLAG in message
    code, out = invoke("plexus", "predict", CARD, *item, FLAG)
    assert code == 0, out
    assert out.splitlines()[0] == f"model: scripted:rules.yaml; {LABEL}"
    code, out = invoke("plexus", "predict", CARD, *item, FLAG, "--format", "json")
    assert json.loads(out)["model"] == f"scripted:rules.yaml; {LABEL}"


@pytest.mark.usefixtures("no_sandbox")
def test_plexus_evaluate_reports_carry_the_mark() -> None:
    dataset = str(PLEXUS / "office_labels.csv")
    code, message = invoke("plexus", "evaluate", CARD, "--dataset", dataset, "--model", RULES)
    assert code == 2 and FLAG in message
    for output_format in ("markdown", "json"):  # the table shares the markdown's head line
        code, out = invoke("plexus", "evaluate", CARD, "--dataset", dataset, "--model", RULES, FLAG,
                           "--format", output_format)  # fmt: skip
        assert code == 0, out
        assert LABEL in out


@pytest.mark.usefixtures("no_sandbox")
def test_agentv_run_outputs_carry_the_mark(tmp_path: Path) -> None:
    code, message = invoke(*AGENTV_RUN)
    assert code == 2 and FLAG in message
    out_file = tmp_path / "results.jsonl"
    code, out = invoke(*AGENTV_RUN, FLAG, "--out", str(out_file), "--format", "json")
    assert code == 0, out
    assert all(LABEL in run["judge"] for run in json.loads(out)["runs"])
    assert all(LABEL in json.loads(line)["judge"] for line in out_file.read_text().splitlines())
    code, out = invoke(*AGENTV_RUN, FLAG, "--format", "junit")
    [mark] = ET.fromstring(out).iter("property")
    assert (mark.get("name"), mark.get("value")) == ("user_code", LABEL)


@pytest.mark.usefixtures("no_sandbox")
def test_a_scorecard_without_code_runs_and_is_not_marked(tmp_path: Path) -> None:
    card = tmp_path / "plain.yaml"
    card.write_text(
        "name: Plain\nkey: plain\nclass: LangGraphScore\ngraph:\n  - name: ask\n    class: Classifier\n"
        "    valid_classes: ['Yes', 'No']\n    system_message: Judge.\n    user_message: '{{text}}'\n"
    )
    code, out = invoke("plexus", "predict", str(card), "--text", "hi", "--model", RULES)
    assert code == 0, out
    assert out.splitlines()[0] == "model: scripted:rules.yaml"

"""Code nodes run out of process: results, and misbehaving code fails its item while the run goes on."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from engine.formats.plexus.dataset import Row
from engine.formats.plexus.evaluate import EvaluationOptions, evaluate
from tests.engine.formats.plexus.helpers import context, model, run, score, scorecard

LOGICAL = """
name: Decide
graph:
  - name: ask
    class: Classifier
    valid_classes: [Pass, Fail]
    output: {verdict: classification}
  - name: decide
    class: LogicalClassifier
    code: |
      def score(parameters: Score.Parameters, input: Score.Input) -> Score.Result:
          if input.metadata.get("verdict") == "Pass" and input.metadata.get("tier") == "gold":
              return Score.Result(parameters=parameters, value="Yes", metadata={"explanation": "gold pass", "x": 1})
          if input.text == "pass through":
              return None
          return Score.Result(parameters=parameters, value="No", explanation="not gold")
"""


async def test_a_logical_classifier_decides_from_state_and_metadata() -> None:
    result = await run(score(LOGICAL), model([], default="Pass"), tier="gold")
    assert (result.value, result.explanation, result.state["x"]) == ("Yes", "gold pass", 1)
    result = await run(score(LOGICAL), model([], default="Pass"), tier="silver")
    assert (result.value, result.explanation) == ("No", "not gold")


async def test_a_logical_classifier_returning_none_passes_the_state_through() -> None:
    result = await run(score(LOGICAL), model([], default="Fail"), text="pass through")
    assert (result.value, result.path) == ("Fail", ("ask", "decide"))


async def test_a_logical_node_result_is_mapped_by_output() -> None:
    one = score(
        """
name: Count
graph:
  - name: count
    class: LogicalNode
    function_name: process
    code: |
      def process(context):
          words = context["text"].split()
          state = context["state"].model_dump()
          return {"n": len(words), "agent": context["metadata"]["agent"], "seen": state.get("classification")}
    output: {word_count: n, value: agent}
"""
    )
    result = await run(one, model([]), text="one two three", agent="kevin")
    assert (result.state["word_count"], result.value, result.state["seen"]) == (3, "kevin", None)


REPO = Path(__file__).resolve().parents[4]

MISBEHAVING = """
name: Sandbox
scores:
  - name: Guarded
    graph:
      - name: code
        class: LogicalClassifier
        code: |
          import os, socket
          def score(parameters, input):
              if input.text == "loop":
                  while True:
                      pass
              if input.text == "allocate":
                  hog = bytearray(10 * 1024 ** 3)
              if input.text == "environment":
                  return Score.Result(value=os.environ.get("PLEXUS_TEST_SECRET", "none"))
              if input.text == "socket":
                  socket.create_connection(("127.0.0.1", 9), timeout=1)
              if input.text == "raise":
                  raise ValueError("no good")
              return Score.Result(value="Yes", explanation="fine")
"""


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PLEXUS_TEST_SECRET", "sk-do-not-leak")
    return os.environ["PLEXUS_TEST_SECRET"]


async def test_misbehaving_code_fails_only_its_item_and_the_run_goes_on(secret: str) -> None:
    texts = ["loop", "allocate", "environment", "socket", "raise", "fine"]
    rows = [Row(text, text, {}, {"Guarded": "yes"}) for text in texts]
    run = await evaluate(
        scorecard(MISBEHAVING), rows, context(model([])), EvaluationOptions(("Guarded",)), source="s", dataset="d"
    )
    by_item = {item.item_id: item.scores[0] for item in run.items}
    assert by_item["fine"].value == "Yes" and by_item["fine"].verdict == "agree"
    errors = {name: s.error or "" for name, s in by_item.items() if name != "fine"}
    assert all(by_item[name].value == "ERROR" for name in errors)
    assert "CPU limit" in errors["loop"] or "timed out" in errors["loop"]
    assert "MemoryError" in errors["allocate"]
    assert "cannot read or set environment variables" in errors["environment"]
    assert "may not use socket" in errors["socket"]
    assert errors["raise"] == "node 'code': ValueError: no good (code line 13)"
    assert all(secret not in (s.error or "") + str(s.value) for s in by_item.values())
    assert run.status == "partial"
    assert run.summary["scores"]["Guarded"]["errors"] == 5 and run.summary["scores"]["Guarded"]["compared"] == 1


def test_the_runner_is_a_standalone_stdlib_script() -> None:
    runner = Path(__file__).resolve().parents[4] / "engine" / "formats" / "plexus" / "coderunner.py"
    imports = [line for line in runner.read_text().splitlines() if line.startswith(("import ", "from "))]
    assert all("engine" not in line for line in imports)


async def test_code_cannot_read_the_workers_environment_through_proc() -> None:
    # /proc/<parent>/environ holds the environment the worker *started* with: run a real parent process
    user_code = 'import os\ndef score(p, i):\n    return {"value": open(f"/proc/{os.getppid()}/environ").read()}\n'
    script = (
        "import asyncio, json, sys\n"
        "from engine.formats.plexus.code import CodeNodeError, CodeRequest, run_code\n"
        "request = CodeRequest('score', sys.argv[1], 'score', {}, '', {}, {})\n"
        "try:\n"
        "    print(json.dumps(asyncio.run(run_code(request))))\n"
        "except CodeNodeError as exc:\n"
        "    print(json.dumps({'error': str(exc)}))\n"
    )
    env = {**os.environ, "PLEXUS_PARENT_SECRET": "sk-parent-secret"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, user_code, env=env, cwd=str(REPO), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    assert "sk-parent-secret" not in out.decode()
    # In the sandbox's PID namespace the parent it sees is bubblewrap's init, not the worker; either way the audit
    # hook (the second layer) refuses the open before anything is read.
    error = json.loads(out)["error"]
    assert error.startswith("PermissionError: code nodes may not open files (/proc/")
    assert error.endswith("/environ) (code line 3)")


async def test_a_code_node_reads_its_scorecards_folder_and_nothing_beside_it(tmp_path: Path) -> None:
    from engine.formats.plexus.code import CodeRequest, run_code

    folder = tmp_path / "cards"
    folder.mkdir()
    folder.chmod(0o755)
    (folder / "words.txt").write_text("beets bears")
    (tmp_path / "beside.txt").write_text("hidden")
    code = (
        "import os\ndef score(parameters, input):\n"
        "    return {'value': open('words.txt').read(), 'explanation': str(os.path.exists('../beside.txt'))}\n"
    )
    answer = await run_code(CodeRequest("score", code, "score", {}, "", {}, {}), folder=folder)
    assert (answer["value"], answer["explanation"]) == ("beets bears", "False")

"""Code judges: the stdin contract of both eras, both reply shapes, clamping, non-JSON output, non-zero exits
and timeouts, run out of process in the eval file's directory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from engine.formats.agentv.codejudge import Observed, run_code_judge
from engine.formats.agentv.model import Dialect, EvalCase, EvaluatorSpec
from engine.formats.targets import TargetAnswer, ToolCall
from engine.models import TokenUsage


def judge_case(tmp_path: Path, body: str, dialect: Dialect = "seed") -> tuple[EvalCase, EvaluatorSpec]:
    tmp_path.chmod(0o755)  # the sandbox's user is a stranger: pytest's folders are closed to others
    (tmp_path / "judge.py").write_text(body)
    evaluated = EvalCase(
        "c1",
        "Mentions beets",
        ({"role": "system", "content": "You are Dwight"}, {"role": "user", "content": "Weekend?"}),
        ({"role": "assistant", "content": "Beets."},),
        source=tmp_path / "cases.yaml",
        dialect=dialect,
    )
    spec = EvaluatorSpec(
        "code",
        "code_judge",
        config={"type": "code_judge", "min_len": 3, "timeout_seconds": 2},
        argv=(sys.executable, "judge.py"),
    )
    return evaluated, spec


SEEN = Observed(
    TargetAnswer("c1", "I farmed beets.", "t", (ToolCall("search", {"q": "beets"}, "ok"),), usage=TokenUsage(3, 4)),
    duration_ms=42.0,
)

ECHO = """
import json, os, sys
case = json.load(sys.stdin)
print(json.dumps({"score": 0.5, "hits": [], "misses": [], "reasoning": json.dumps({"case": case, "cwd": os.getcwd()})}))
"""


async def test_stdin_carries_both_contracts_in_snake_case_and_runs_in_the_eval_folder(tmp_path: Path) -> None:
    evaluated, spec = judge_case(tmp_path, ECHO)
    result = await run_code_judge(evaluated, spec, SEEN)
    seen = json.loads(result.reasoning)
    assert Path(seen["cwd"]).resolve() == tmp_path.resolve()
    case = seen["case"]
    assert case["question"] == "Weekend?"
    assert case["expected_outcome"] == case["criteria"] == "Mentions beets"
    assert case["reference_answer"] == "Beets."
    assert case["candidate_answer"] == case["output"] == "I farmed beets."
    assert case["output_messages"] == [
        {
            "role": "assistant",
            "content": "I farmed beets.",
            "tool_calls": [{"tool": "search", "input": {"q": "beets"}, "output": "ok"}],
        }
    ]
    assert case["input_messages"] == case["input"] == list(evaluated.input_messages)
    assert case["expected_messages"] == case["expected_output"] == [{"role": "assistant", "content": "Beets."}]
    assert case["config"] == {"min_len": 3}
    assert (case["token_usage"], case["duration_ms"]) == ({"input": 3, "output": 4}, 42.0)


@pytest.mark.parametrize(("printed", "score"), [("1.7", 1.0), ("-2", 0.0), ("0.25", 0.25)])
async def test_scores_are_clamped(tmp_path: Path, printed: str, score: float) -> None:
    body = f"import json; print(json.dumps({{'score': {printed}, 'hits': ['h'], 'misses': ['m'], 'reasoning': 'r'}}))"
    evaluated, spec = judge_case(tmp_path, body)
    result = await run_code_judge(evaluated, spec, SEEN)
    assert (result.score, result.hits, result.misses, result.reasoning) == (score, ("h",), ("m",), "r")


async def test_the_4x_reply_shape_with_assertions_is_read(tmp_path: Path) -> None:
    body = (
        "import json; print(json.dumps({'score': 0.5, 'assertions': [{'text': 'a', 'passed': True}, "
        "{'text': 'b', 'passed': False}], 'details': {'k': 1}}))"
    )
    evaluated, spec = judge_case(tmp_path, body)
    result = await run_code_judge(evaluated, spec, SEEN)
    assert (result.score, result.hits, result.misses, dict(result.details)) == (0.5, ("a",), ("b",), {"k": 1})


async def test_assertions_without_a_score_score_their_pass_fraction(tmp_path: Path) -> None:
    body = (
        "import json; print(json.dumps({'assertions': [{'text': 'a', 'passed': True}] * 3"
        " + [{'text': 'b', 'passed': False}]}))"
    )
    evaluated, spec = judge_case(tmp_path, body)
    assert (await run_code_judge(evaluated, spec, SEEN)).score == 0.75


async def test_seed_era_non_json_output_scores_zero_with_the_reason(tmp_path: Path) -> None:
    evaluated, spec = judge_case(tmp_path, "print('looks fine to me')")
    result = await run_code_judge(evaluated, spec, SEEN)
    assert result.score == 0.0 and result.verdict == "fail"
    assert result.error == "code judge printed no JSON object: 'looks fine to me'"


async def test_seed_era_non_zero_exit_scores_zero_with_the_reason(tmp_path: Path) -> None:
    body = "import sys, json; print(json.dumps({'score': 1})); sys.stderr.write('boom'); sys.exit(3)"
    evaluated, spec = judge_case(tmp_path, body)
    result = await run_code_judge(evaluated, spec, SEEN)
    assert (result.score, result.error) == (0.0, "code judge exited with code 3: boom")


async def test_a_judge_that_runs_too_long_is_killed_and_scores_zero(tmp_path: Path) -> None:
    evaluated, spec = judge_case(tmp_path, "import time\nwhile True: time.sleep(0.05)")
    result = await run_code_judge(evaluated, spec, SEEN)
    assert result.score == 0.0
    assert result.error is not None and "time" in result.error


async def test_a_missing_program_scores_zero(tmp_path: Path) -> None:
    evaluated, spec = judge_case(tmp_path, "")
    spec = EvaluatorSpec("code", "code_judge", argv=("/nonexistent/judge",))
    result = await run_code_judge(evaluated, spec, SEEN)
    assert result.score == 0.0 and result.error


async def test_4x_graders_follow_the_4x_exit_rules(tmp_path: Path) -> None:
    evaluated, spec = judge_case(tmp_path, "print('all good')", dialect="4.x")
    passed = await run_code_judge(evaluated, spec, SEEN)
    assert (passed.score, passed.hits) == (1.0, ("all good",))
    evaluated, spec = judge_case(tmp_path, "import sys; sys.exit(2)", dialect="4.x")
    assert (await run_code_judge(evaluated, spec, SEEN)).score == 0.0
    evaluated, spec = judge_case(
        tmp_path, "import sys; print('x'); sys.stderr.write('crash'); sys.exit(1)", dialect="4.x"
    )
    crashed = await run_code_judge(evaluated, spec, SEEN)
    assert (crashed.score, crashed.error) == (0.0, "code grader exited with code 1: crash")


async def test_the_service_environment_does_not_reach_the_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    body = "import json, os; print(json.dumps({'score': 1, 'reasoning': ','.join(sorted(os.environ))}))"
    evaluated, spec = judge_case(tmp_path, body)
    result = await run_code_judge(evaluated, spec, SEEN)
    assert "ANTHROPIC_API_KEY" not in result.reasoning


async def test_a_judge_beside_the_evals_folder_runs_but_its_neighbours_stay_hidden(tmp_path: Path) -> None:
    """Upstream's layout: ``evals/dataset.yaml`` names ``../judges/x.py``; that folder is shown, nothing else."""
    for name in ("evals", "judges", "private"):
        (tmp_path / name).mkdir(mode=0o755)
        (tmp_path / name).chmod(0o755)
    (tmp_path / "private" / "notes.txt").write_text("not for judges")
    (tmp_path / "judges" / "judge.py").write_text(
        "import json, os\nhidden = os.path.exists('../private/notes.txt')\n"
        "print(json.dumps({'score': 0.0 if hidden else 1.0, 'hits': [], 'misses': [], 'reasoning': str(hidden)}))\n"
    )
    evaluated, spec = judge_case(tmp_path / "evals", "")
    argv = (sys.executable, "../judges/judge.py")
    spec = EvaluatorSpec("code", "code_judge", config={"timeout_seconds": 5}, argv=argv)
    outcome = await run_code_judge(evaluated, spec, SEEN)
    assert (outcome.score, outcome.reasoning) == (1.0, "False")

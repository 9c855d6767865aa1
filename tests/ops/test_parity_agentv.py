"""The bundled 4.x parity file scores, under drift, exactly what agentv 4.42.4 scored on it (figures measured
with ``make parity-agentv``; the comparison itself needs npm and is not part of ``make test``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.formats.agentv.records import index_record
from ops.parity.agentv import FIXTURE, compare, run_drift

#: agentv 4.42.4 index.jsonl of ops/parity/agentv/parity.eval.yaml: test_id -> (score, execution_status,
#: {evaluator: score})
AGENTV_4_42_4 = {
    "weighted-with-zero": (0.875, "ok", {"output-grader": 1.0, "sequence": 0.5, "ignored": 0.0}),
    "any-order-minimums": (2 / 3, "quality_failure", {"minimums": 2 / 3}),
    "in-order-args": (1 / 3, "quality_failure", {"args-sequence": 1 / 3}),
    "exact-extra-call": (2 / 3, "quality_failure", {"exact-steps": 1.0, "exact-args": 0.5}),
    "seed-contract-grader": (5 / 6, "ok", {"seed-judge": 1.0, "output-judge": 0.5}),
    "misbehaving-graders": (0.75, "quality_failure", {"crashes": 0.0, "prints-text": 1.0, "overshoots": 1.0}),
    "args-match-and-4x-modes": (
        0.7499999999999999,
        "quality_failure",
        {"superset-args": 2 / 3, "field-args": 1.0, "all-expected-somewhere": 2 / 3, "only-allowed-calls": 2 / 3},
    ),
    "string-assertions": (
        7 / 9.5,
        "quality_failure",
        {
            "has-time": 1.0,
            "any-room": 1.0,
            "all-words": 0.0,
            "opens": 1.0,
            "closes": 1.0,
            "pattern": 1.0,
            "json": 0.0,
            "exact": 0.0,
            "no-apology": 1.0,
        },
    ),
    "required-gate": (0.0, "quality_failure", {"fine": 1.0, "gate": 0.5}),
    "required-passes": (0.25, "quality_failure", {"fine": 0.0, "gate": 0.5}),
    "llm-grader-scripted": ((2 * 7 / 9 + 1) / 3, "ok", {"tone": 7 / 9, "mentions-bow": 1.0}),
    "llm-grader-default": (3 / 9, "quality_failure", {"tone": 3 / 9}),
    "rubrics-scripted": (3 / 3.5, "ok", {"character": 3 / 3.5}),
    "rubrics-required-unmet": (0.75, "quality_failure", {"character": 0.75}),
    "execution-limits": (
        0.5,
        "quality_failure",
        {"fast": 1.0, "slow-limit": 0.0, "cheap": 1.0, "tokens-ok": 1.0, "tokens-over": 0.0},
    ),
}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    target = tmp_path / "agentv"
    shutil.copytree(FIXTURE, target)
    return target


async def test_drift_scores_the_parity_file_as_agentv_4_42_4_did(workdir: Path) -> None:
    outcomes = await run_drift(workdir, "parity.eval.yaml")
    character = next(o for o in outcomes if o.case.id == "rubrics-required-unmet").results[0]
    assert character.verdict == "fail"  # a required rubric is unmet (agentv: verdict fail too)
    got = {
        o.case.id: (o.score, index_record(o)["execution_status"], {r.name: r.score for r in o.results})
        for o in outcomes
    }
    assert got.keys() == AGENTV_4_42_4.keys()
    for case_id, (score, status, evaluators) in AGENTV_4_42_4.items():
        assert got[case_id][0] == pytest.approx(score, abs=1e-9)
        assert got[case_id][1] == status
        assert got[case_id][2] == pytest.approx(evaluators, abs=1e-9)


async def test_the_comparison_flags_a_difference(workdir: Path) -> None:
    outcomes = await run_drift(workdir, "parity.eval.yaml")
    theirs = [
        {
            "test_id": case_id,
            "score": score + (0.01 if case_id == "in-order-args" else 0.0),
            "execution_status": status,
            "scores": [{"name": n, "score": s, "weight": 1.0, "verdict": "fail"} for n, s in evaluators.items()],
        }
        for case_id, (score, status, evaluators) in AGENTV_4_42_4.items()
    ]
    rows = compare(theirs, outcomes)
    flagged = {(r[0], r[1]) for r in rows if not r[6]}
    assert ("in-order-args", "(case)") in flagged
    assert ("weighted-with-zero", "output-grader") in flagged  # weight 3 there, 1.0 here

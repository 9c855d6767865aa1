"""``make parity-agentv``: score the bundled 4.x eval files with the real ``agentv`` CLI and with drift, compare.

1. installs ``agentv@4.42.4`` from the npm registry into a cache folder outside the repository
   (``~/.cache/persona-drift/agentv``, or ``$PARITY_AGENTV_CACHE``) unless that version is already there;
2. copies ``ops/parity/agentv/`` (eval file, ``.agentv/targets.yaml`` with a ``cli`` target replaying
   recorded answers, code graders) to a scratch folder and runs ``agentv eval run`` there — offline: in an
   empty network namespace when ``unshare --net`` works here, and without API keys in its environment;
3. runs the same file through drift's loader, target and runner (``cli`` target ``replay``); LLM graders and
   rubrics are answered on both sides by the same rules (``judge_rules.yaml``): drift's scripted judge, and on
   the agentv side the ``cli`` grader target ``grader`` (``--grader-target grader``, ``scripted_grader.py``);
4. compares every case score and every evaluator's score (equal within 1e-9), weight and pass/not-pass
   verdict (4.x verdicts are pass/fail; drift's ``borderline`` counts as not passing), and prints a table.

Exit 0 when everything matches, 1 on a difference, 2 when the CLI cannot be installed or run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.formats.agentv.loader import load_eval_file
from engine.formats.agentv.records import index_record
from engine.formats.agentv.runner import CaseOutcome, RunOptions, run_cases
from engine.formats.agentv.targets import load_named_target
from engine.judges.scripted import ScriptedJudge

VERSION = "4.42.4"
TOLERANCE = 1e-9
FIXTURE = Path(__file__).resolve().parent / "agentv"
EVAL_FILES = ("parity.eval.yaml",)
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def cache_dir() -> Path:
    return Path(os.environ.get("PARITY_AGENTV_CACHE", Path.home() / ".cache" / "persona-drift" / "agentv"))


def ensure_cli(cache: Path) -> Path:
    binary = cache / "node_modules" / ".bin" / "agentv"
    manifest = cache / "node_modules" / "agentv" / "package.json"
    if binary.exists() and manifest.is_file() and json.loads(manifest.read_text())["version"] == VERSION:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("parity-agentv: npm is not installed")
    cache.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache), f"agentv@{VERSION}"]
    subprocess.run(command, check=True, timeout=600)
    return binary


@functools.cache
def network_isolation_available() -> bool:
    """True when ``unshare --net`` works here (as root, or where unprivileged user namespaces are allowed)."""
    try:
        done = subprocess.run(["unshare", "--net", "--", "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def offline_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}


def run_agentv(binary: Path, workdir: Path, eval_file: str) -> list[dict[str, Any]]:
    out = workdir / ("run-" + eval_file.split(".", maxsplit=1)[0])
    argv = [str(binary), "eval", "run", eval_file, "--target", "replay", "--grader-target", "grader"]
    argv += ["--output", str(out), "--workers", "1"]
    if network_isolation_available():
        argv = ["unshare", "--net", "--", *argv]
    done = subprocess.run(
        argv, cwd=workdir, env=offline_env(), capture_output=True, text=True, timeout=600, check=False
    )
    index = out / "index.jsonl"
    if not index.is_file():
        raise SystemExit(f"parity-agentv: agentv wrote no index.jsonl (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return [json.loads(line) for line in index.read_text().splitlines() if line.strip()]


async def run_drift(workdir: Path, eval_file: str) -> list[CaseOutcome]:
    loaded, issues = load_eval_file(workdir / eval_file)
    if loaded is None or issues:
        raise SystemExit("parity-agentv: drift rejected the file:\n" + "\n".join(str(i) for i in issues))
    target = load_named_target("replay", workdir)
    judge = ScriptedJudge.from_file(workdir / "judge_rules.yaml")
    return await run_cases(loaded.cases, target, judge, RunOptions(workers=4))


Row = tuple[str, str, float, float, str, str, bool]
_NAN = float("nan")


def _evaluator_rows(outcome: CaseOutcome, scores: list[dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    mine = {r.name: r for r in outcome.results}
    for score in scores:
        result = mine.pop(score["name"], None)
        if result is None:
            rows.append(
                (outcome.case.id, score["name"], float(score["score"]), _NAN, score["verdict"], "missing", False)
            )
            continue
        same = abs(float(score["score"]) - result.score) <= TOLERANCE and float(score["weight"]) == result.weight
        same = same and (score["verdict"] == "pass") == (result.verdict == "pass")
        rows.append(
            (outcome.case.id, result.name, float(score["score"]), result.score, score["verdict"], result.verdict, same)
        )
    rows.extend((outcome.case.id, name, _NAN, r.score, "missing", r.verdict, False) for name, r in mine.items())
    return rows


def compare(theirs: list[dict[str, Any]], ours: list[CaseOutcome]) -> list[Row]:
    """One row per case and per evaluator: (case, evaluator, agentv, drift, agentv verdict, drift verdict, ok)."""
    by_id = {o.case.id: o for o in ours}
    rows: list[Row] = []
    for record in theirs:
        outcome = by_id.pop(record["test_id"], None)
        if outcome is None:
            rows.append((record["test_id"], "(case)", float(record["score"]), _NAN, "", "missing", False))
            continue
        status = index_record(outcome)["execution_status"]
        case_ok = abs(float(record["score"]) - outcome.score) <= TOLERANCE and status == record["execution_status"]
        agentv_score = float(record["score"])
        rows.append(
            (outcome.case.id, "(case)", agentv_score, outcome.score, record["execution_status"], status, case_ok)
        )
        rows.extend(_evaluator_rows(outcome, record.get("scores", [])))
    rows.extend((case_id, "(case)", _NAN, o.score, "missing", o.verdict, False) for case_id, o in by_id.items())
    return rows


def main() -> int:
    binary = ensure_cli(cache_dir())
    all_rows = []
    with tempfile.TemporaryDirectory(prefix="drift-parity-agentv-") as scratch:
        workdir = Path(scratch) / "agentv"
        shutil.copytree(FIXTURE, workdir)
        for eval_file in EVAL_FILES:
            theirs = run_agentv(binary, workdir, eval_file)
            ours = asyncio.run(run_drift(workdir, eval_file))
            all_rows.extend(compare(theirs, ours))
    print(f"{'case':<26} {'evaluator':<24} {'agentv':>10} {'drift':>10}  verdict / status (agentv, drift)")
    for case_id, name, a, b, va, vb, ok in all_rows:
        print(f"{case_id:<26} {name:<24} {a:10.6f} {b:10.6f}  {va or '-':<15} {vb:<15} {'ok' if ok else 'DIFF'}")
    cases = sum(1 for r in all_rows if r[1] == "(case)")
    bad = [r for r in all_rows if not r[6]]
    isolated = (
        "an empty network namespace" if network_isolation_available() else "the host network (unshare unavailable)"
    )
    print(
        f"agentv {VERSION} vs drift: {cases} cases, {len(all_rows) - cases} evaluator scores, "
        f"{len(bad)} differences (tolerance {TOLERANCE:g}); agentv ran in {isolated}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

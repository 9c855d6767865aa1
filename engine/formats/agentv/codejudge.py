"""Code judges (seed ``code_judge``, 4.x ``code-grader``): user programs scoring an answer, run sandboxed.

The program — any command — runs through :func:`engine.formats.usercode.run_user_code` with the command runtime
(all of ``/usr``, a few ``/etc`` files, drift's Python first on ``PATH``; not ``/home``, ``/root``, ``/var``,
``/opt`` nor the project), the eval file's folder read-only as its working directory, a private ``/tmp``, no
network, another user without capabilities, a seccomp filter, rlimits and a wall-clock timeout. Its stdin is
one snake_case JSON object carrying **both** contracts, so judges of either era work:

* seed era: ``question``, ``expected_outcome``, ``expected_messages``, ``reference_answer``,
  ``candidate_answer``, ``output_messages``, ``input_messages``, ``config``;
* 4.x: ``output`` (the final answer), ``criteria``, ``input``, ``expected_output``, ``messages``, ``trace``,
  ``token_usage``, ``cost_usd``, ``duration_ms``, ``config``.

Either reply shape is read: ``{score, hits, misses, reasoning}`` or ``{score, assertions: [{text, passed}],
details}``; the score is clamped to [0, 1].

What a misbehaving program scores depends on the dialect of its file, as in the CLI of that era: a seed-era
judge that prints non-JSON or exits non-zero scores 0 with the reason; a 4.x grader that exits 0 without JSON
passes (1.0), and one that exits non-zero scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from engine.formats.agentv.model import EvalCase, EvaluatorSpec
from engine.formats.agentv.scoring import EvaluatorResult, clamp, failed, result
from engine.formats.bwrap import command_runtime
from engine.formats.sandbox import Limits
from engine.formats.targets import TargetAnswer
from engine.formats.usercode import STRICT, CodeSandbox, run_user_code

DEFAULT_TIMEOUT_S = 60.0
CODE_AGGREGATORS = frozenset({"code_judge", "code-judge", "code-grader"})
_SPEC_KEYS = {"name", "type", "weight", "script", "command", "path", "timeout_seconds", "cwd"}


@dataclass(frozen=True, slots=True)
class Observed:
    """What the target did for one case: its answer plus execution figures the metric evaluators read."""

    answer: TargetAnswer
    duration_ms: float
    cost_usd: float | None = None

    def output_messages(self) -> list[dict[str, Any]]:
        calls = [{"tool": c.tool, "input": c.input, "output": c.output} for c in self.answer.tool_calls]
        message: dict[str, Any] = {"role": "assistant", "content": self.answer.text}
        if calls:
            message["tool_calls"] = calls
        return [message]


def payload(case: EvalCase, spec: EvaluatorSpec, observed: Observed) -> bytes:
    config = {k: v for k, v in spec.config.items() if k not in _SPEC_KEYS}
    usage = observed.answer.usage
    outputs = observed.output_messages()
    body = {
        "question": case.question,
        "expected_outcome": case.expected_outcome,
        "criteria": case.expected_outcome,
        "expected_messages": list(case.expected_messages),
        "expected_output": list(case.expected_messages),
        "reference_answer": case.reference_answer,
        "candidate_answer": observed.answer.text,
        "output": observed.answer.text,
        "output_messages": outputs,
        "messages": outputs,
        "input_messages": list(case.input_messages),
        "input": list(case.input_messages),
        "trace": {"tool_calls": outputs[0].get("tool_calls", [])},
        "token_usage": {"input": usage.input_tokens, "output": usage.output_tokens},
        "cost_usd": observed.cost_usd,
        "duration_ms": observed.duration_ms,
        "config": config or None,
    }
    return orjson.dumps(body, default=str)


def named_folders(argv: Sequence[str], folder: Path) -> tuple[Path, ...]:
    """The folders of the files a judge's command names outside its eval file's folder (``../judges/x.ts``):
    the sandbox shows them too, read-only, as upstream's layouts keep judges beside the evals folder."""
    found: list[Path] = []
    for word in argv:
        candidate = Path(word) if Path(word).is_absolute() else folder / word
        if "/" in word and candidate.is_file():
            parent = candidate.resolve().parent
            if parent != folder and folder not in parent.parents and parent not in found:
                found.append(parent)
    return tuple(found)


def runs_code(specs: Iterable[EvaluatorSpec]) -> bool:
    """True when any evaluator (composites' children and aggregators included) is a code judge."""
    for spec in specs:
        aggregator = spec.config.get("aggregator")
        kind = aggregator.get("type") if isinstance(aggregator, Mapping) else None
        if spec.type == "code_judge" or kind in CODE_AGGREGATORS or runs_code(spec.children):
            return True
    return False


async def run_code_judge(
    case: EvalCase, spec: EvaluatorSpec, observed: Observed, sandbox: CodeSandbox = STRICT
) -> EvaluatorResult:
    timeout = spec.config.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    wall = float(timeout) if isinstance(timeout, int | float) and not isinstance(timeout, bool) else DEFAULT_TIMEOUT_S
    limits = Limits(wall_s=wall, cpu_s=max(1, int(wall)), memory_mb=1024)
    folder = case.source.resolve().parent
    outcome = await run_user_code(
        list(spec.argv), payload(case, spec, observed), sandbox=sandbox, runtime=command_runtime(),
        folder=folder, also=named_folders(spec.argv, folder), limits=limits, what=str(case.source),
    )  # fmt: skip
    stdout = outcome.stdout.decode("utf-8", errors="replace").strip()
    if outcome.timed_out or (outcome.error and outcome.returncode is None):
        return failed(spec, f"code judge {' '.join(spec.argv)!r}: {outcome.error or 'timed out'}")
    parsed = _json_object(stdout)
    if case.dialect == "4.x":
        return _reply_4x(spec, parsed, stdout, outcome.returncode or 0, outcome.stderr.decode(errors="replace"))
    if outcome.returncode != 0:
        tail = outcome.stderr.decode("utf-8", errors="replace").strip()[-300:]
        return failed(spec, f"code judge exited with code {outcome.returncode}" + (f": {tail}" if tail else ""))
    if parsed is None:
        return failed(spec, f"code judge printed no JSON object: {stdout[:200]!r}")
    return read_reply(spec, parsed)


def _json_object(text: str) -> Mapping[str, Any] | None:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, Mapping) else None


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def read_reply(spec: EvaluatorSpec, reply: Mapping[str, Any]) -> EvaluatorResult:
    """Either reply shape: ``{score, hits, misses, reasoning}`` or ``{score, assertions, details}``."""
    hits, misses = _strings(reply.get("hits")), _strings(reply.get("misses"))
    assertions = [a for a in reply.get("assertions") or [] if isinstance(a, Mapping) and isinstance(a.get("text"), str)]
    for item in assertions:
        (hits if item.get("passed") else misses).append(item["text"])
    raw = reply.get("score")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        score = float(raw) if math.isfinite(raw) else 0.0
    elif assertions:
        score = sum(1 for a in assertions if a.get("passed")) / len(assertions)
    else:
        return failed(spec, "code judge reply has no numeric 'score'")
    reasoning = reply.get("reasoning")
    details = reply.get("details") if isinstance(reply.get("details"), Mapping) else {}
    return result(spec, clamp(score), hits, misses, reasoning=str(reasoning or ""), details=dict(details or {}))


def _reply_4x(
    spec: EvaluatorSpec, parsed: Mapping[str, Any] | None, stdout: str, code: int, stderr: str
) -> EvaluatorResult:
    if code != 0 and (parsed is not None or stdout.startswith("[") or stderr.strip()):
        return failed(
            spec, f"code grader exited with code {code}" + (f": {stderr.strip()[-300:]}" if stderr.strip() else "")
        )
    if parsed is None:
        text = stdout or (f"exit {code}" if code else "exit 0")
        return result(spec, 1.0 if code == 0 else 0.0, (text,) if code == 0 else (), () if code == 0 else (text,))
    if not isinstance(parsed.get("score"), int | float) and not parsed.get("assertions"):
        return result(spec, 0.0, (), ("code grader reply has no score",))
    return read_reply(spec, parsed)

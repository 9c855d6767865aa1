"""Record and replay judge answers (cassettes): deterministic CI runs with answers a real judge once gave.

A cassette is a JSONL file; each line is one recorded call::

    {"fingerprint": "...", "judge": "anthropic:claude-haiku-4-5", "request": {summary},
     "answers": [{"claim_id": ..., "value": ..., "reasoning": ..., "first_value": ..., "items": [...]}],
     "usage": {...}, "calls": 1}

The fingerprint is the SHA-256 of a canonical JSON of what the judge was *asked*: the full rendered prompt
(:func:`engine.prompts.build_prompt`, system then user text), the mode, the claim ids and the
double-check flag, plus a format version. Every judge answers the same request through the same prompt
(temperature is always 0), so the prompt is the question.

The name of the recorded judge is deliberately **not** part of the fingerprint: a replay run does not know
(and should not have to know) which judge recorded a cassette, and a cassette recorded with a scripted judge
in tests must serve the same requests as one recorded with Anthropic. The recorded name is kept on every line
for provenance. When a fingerprint occurs more than once, the last line wins (a re-recording appends).

A replayed result carries the recorded usage and call count (what the recorded call spent), so cost reports of
a replayed run match the recorded one. A request the cassette has no line for raises
:class:`~engine.errors.CassetteMiss` naming the fingerprint; there is never a default answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import CassetteMiss, ConfigurationError
from engine.judges.base import ClaimAnswer, Judge, JudgeRequest, JudgeResult
from engine.models import TokenUsage
from engine.prompts import Prompt, build_prompt

FINGERPRINT_VERSION = 3  # 2: the cache-shaped prompt layout (issue 28); 3: evidence first, append-only; older miss


def fingerprint(request: JudgeRequest, prompt: Prompt | None = None) -> str:
    """The cassette key of ``request`` (independent of the judge that answers it)."""
    canonical = json.dumps(
        {
            "version": FINGERPRINT_VERSION,
            "prompt": (prompt or build_prompt(request)).full_text(),
            "mode": request.mode.value,
            "claim_ids": [claim.id for claim in request.claims],
            "double_check": request.double_check,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Recording:
    """One cassette line."""

    fingerprint: str
    judge: str
    answers: tuple[ClaimAnswer, ...]
    usage: TokenUsage
    calls: int


class ReplayJudge:
    """Answers from a cassette; a request without a recording raises :class:`CassetteMiss`."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._recordings = load_cassette(path)

    @property
    def name(self) -> str:
        return f"replay:{self._path.stem}"

    def __repr__(self) -> str:
        return f"ReplayJudge(path={str(self._path)!r}, recordings={len(self._recordings)})"

    def __len__(self) -> int:
        return len(self._recordings)

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        started = time.perf_counter()
        prompt = build_prompt(request)
        key = fingerprint(request, prompt)
        recording = self._recordings.get(key)
        if recording is None:
            raise CassetteMiss(key, str(self._path))
        return JudgeResult(
            answers=recording.answers,
            judge=self.name,
            usage=recording.usage,
            calls=recording.calls,
            latency_ms=(time.perf_counter() - started) * 1000,
            prompt_chars=len(prompt.full_text()),
            cacheable_prefix_chars=prompt.cacheable_chars(),
        )


class RecordingJudge:
    """Wraps a judge and appends one cassette line per answered request (thread- and task-safe)."""

    def __init__(self, inner: Judge, path: Path) -> None:
        self.inner = inner
        self._path = path
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    def __repr__(self) -> str:
        return f"RecordingJudge(inner={self.inner!r}, path={str(self._path)!r})"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        result = await self.inner.evaluate(request)
        line = json.dumps(_line(request, result), ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with self._path.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
                handle.flush()
        return result


def _line(request: JudgeRequest, result: JudgeResult) -> dict[str, Any]:
    return {
        "fingerprint": fingerprint(request),
        "judge": result.judge,
        "request": {
            "mode": request.mode.value,
            "target": request.target_name,
            "agent_id": request.agent_id,
            "claims": [{"id": c.id, "text": c.text} for c in request.claims],
            "double_check": request.double_check,
            "prompt_chars": result.prompt_chars,
        },
        "answers": [
            {
                "claim_id": a.claim_id,
                "value": a.value,
                "reasoning": a.reasoning,
                "first_value": a.first_value,
                "items": list(a.items),
            }
            for a in result.answers
        ],
        "usage": result.usage.as_dict(),
        "calls": result.calls,
    }


def load_cassette(path: Path) -> dict[str, Recording]:
    """All recordings of a cassette by fingerprint (last line wins); bad lines raise ConfigurationError."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigurationError(f"cannot read cassette {path}: {error.strerror}") from None
    recordings: dict[str, Recording] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            recording = _recording(json.loads(raw))
        except (ValueError, KeyError, TypeError) as error:
            raise ConfigurationError(f"{path}:{number}: not a valid cassette line ({error})") from None
        recordings[recording.fingerprint] = recording
    return recordings


def _recording(data: dict[str, Any]) -> Recording:
    answers = tuple(_answer(a) for a in data["answers"])
    usage = TokenUsage(**{k: int(v) for k, v in dict(data.get("usage") or {}).items()})
    return Recording(
        fingerprint=str(data["fingerprint"]),
        judge=str(data["judge"]),
        answers=answers,
        usage=usage,
        calls=int(data.get("calls", 1)),
    )


def _answer(data: dict[str, Any]) -> ClaimAnswer:
    value = data["value"]
    first = data.get("first_value")
    if not isinstance(value, int) or (first is not None and not isinstance(first, int)):
        raise TypeError(f"answer values must be numbers or booleans, not {value!r}")
    return ClaimAnswer(
        claim_id=str(data["claim_id"]),
        value=value,
        reasoning=str(data["reasoning"]),
        first_value=first,
        items=tuple(str(item) for item in data.get("items", ())),
    )

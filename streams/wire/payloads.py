"""Wire payloads: the public contract of every topic (JSON values, UTF-8 keys).

Inbound models ignore unknown fields (forward compatible) but validate the known ones strictly: a JSON value
must already have the field's type (``true`` and ``"2"`` are not integers, ``2.0`` is not an integer, numbers
are not strings). The one conversion kept is the one JSON needs: timestamps are RFC 3339 strings (schema
``format: date-time``); a number is not a timestamp. An inbound record larger than :data:`MAX_RECORD_BYTES` is
refused before it is parsed. Every field is documented in the README and exported as JSON Schema to
``schemas/topics/``. Encoding and decoding use orjson.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from engine.errors import PayloadError
from engine.models import Decision, Outcome

MAX_TEXT_BYTES = 32 * 1024
MAX_ID_CHARS = 128
#: Largest inbound record value (UTF-8 JSON) the worker decodes; a larger one is dead-lettered unread.
MAX_RECORD_BYTES = 256 * 1024
#: A dead letter keeps at most this many bytes of the original value (with its full size and sha256), so it
#: always fits the producer's 1 MiB request limit once base64-encoded.
DEAD_LETTER_RAW_BYTES = 64 * 1024
#: Longest record key and reason text a dead letter keeps (cut beyond, marked with an ellipsis).
DEAD_LETTER_KEY_CHARS = 1024
DEAD_LETTER_ERROR_CHARS = 4096

STRICT_NOTE = (
    "Validated strictly: every JSON value must already have the field's type (booleans and strings are not "
    "integers); timestamps are RFC 3339 strings. A record value larger than "
    f"{MAX_RECORD_BYTES} bytes is dead-lettered as 'record too large' without being parsed."
)

M = TypeVar("M", bound=BaseModel)


def utcnow() -> datetime:
    return datetime.now(UTC)


def unstorable(value: object) -> str | None:
    """Why PostgreSQL cannot store ``value`` (a string, or a list or mapping holding strings) as text or inside
    jsonb, or None. Only NUL (U+0000) is left to check: the JSON parsers already refuse unpaired surrogates."""
    if isinstance(value, str):
        return "holds a NUL character (\\u0000), which PostgreSQL cannot store" if "\x00" in value else None
    if isinstance(value, dict):
        return next((r for item in value.items() for part in item if (r := unstorable(part))), None)
    if isinstance(value, list | tuple):
        return next((r for part in value if (r := unstorable(part))), None)
    return None


class _Inbound(BaseModel):
    """Topic payloads the worker reads; :func:`decode` validates them strictly (see :data:`STRICT_NOTE`)."""

    model_config = ConfigDict(extra="ignore", frozen=True, json_schema_extra={"$comment": STRICT_NOTE})

    @model_validator(mode="after")
    def _storable(self) -> _Inbound:
        """Every text field must be storable in PostgreSQL: a record is refused here, at the payload boundary
        (dead-lettered with this reason before any judge call), never by a database sink later."""
        for name, value in self.__dict__.items():
            if (reason := unstorable(value)) is not None:
                raise ValueError(f"{name} {reason}")
        return self


class _Outbound(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Draft(_Inbound):
    """``drafts`` (in): an agent's message before it is committed. Key: ``agent_id``."""

    draft_id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="Stable id of the draft across attempts")
    attempt: int = Field(1, ge=1, le=100, description="1 for the original, +1 per regeneration")
    agent_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    text: str = Field(description="The draft message; at most 32 KiB of UTF-8")
    run_id: str | None = Field(None, max_length=MAX_ID_CHARS)
    channel: str | None = None
    recipient: str | None = None
    agent_name: str | None = Field(None, description="Display name; overrides the persona file's name")
    persona: str | None = Field(None, description="Persona text; overrides the persona file")
    sent_at: datetime | None = Field(None, description="RFC 3339")
    skip: bool = Field(
        False,
        description="The agent chose silence: the attempt passes at once (decision skip, outcome skipped) and "
        "nothing is committed",
    )

    @field_validator("text")
    @classmethod
    def _text_size(cls, value: str) -> str:
        if len(value.encode("utf-8")) > MAX_TEXT_BYTES:
            raise ValueError(f"text is larger than {MAX_TEXT_BYTES} bytes")
        return value


class ScoreOut(_Outbound):
    score: float
    threshold: float
    passed: bool
    timed_out: bool = False
    error: str | None = Field(None, description="Why the judge call failed (the dimension passed, fail-open)")
    reasoning: str = ""


class SimilarityOut(_Outbound):
    score: float
    threshold: float
    passed: bool
    most_similar: str | None = None


class TokenUsageOut(_Outbound):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class Verdict(_Outbound):
    """``verdicts`` (out): one per draft attempt. Key: ``agent_id``."""

    draft_id: str
    attempt: int
    agent_id: str
    run_id: str | None = None
    decision: Decision
    outcome: Outcome
    text: str = Field(description="The text to commit (forced_through: the best attempt's text)")
    committed_attempt: int | None = None
    scores: dict[str, ScoreOut] = Field(default_factory=dict)
    similarity: SimilarityOut | None = None
    feedback: str | None = None
    latency_ms: float = 0.0
    token_usage: TokenUsageOut = Field(default_factory=TokenUsageOut)
    judge: str | None = Field(None, description="Which judge produced the scores (offline is labelled)")
    unknown_earlier_attempts: int = Field(
        0,
        description="Earlier attempts of this draft the gate no longer knew (their pending entry expired after "
        "DRIFT_PENDING_TTL_S, or never reached it): the best attempt was chosen among the known ones only",
    )


class Message(_Inbound):
    """``messages``: committed conversation events. The gate publishes every commit (``origin: gate``);
    orchestrators may publish stimuli or unchecked actions (``origin: external``). Key: ``agent_id``."""

    message_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    agent_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    agent_name: str | None = None
    text: str
    kind: Literal["action", "stimulus"] = "action"
    source: str | None = Field(None, description="Sender of a stimulus")
    run_id: str | None = None
    channel: str | None = None
    recipient: str | None = None
    origin: Literal["gate", "external"] = "external"
    ts: datetime = Field(default_factory=utcnow)


class CorrectionLog(_Outbound):
    """``correction-logs`` (out): one record per attempt, the columns of the ``correction_logs`` table."""

    draft_id: str
    attempt_number: int
    agent_id: str
    run_id: str | None = None
    original_text: str
    corrected_text: str | None = None
    dimension_scores: dict[str, dict[str, Any]] = Field(default_factory=dict)
    similarity_score: float | None = None
    total_score: float = 0.0
    decision: Decision
    outcome: Outcome
    token_usage: TokenUsageOut = Field(default_factory=TokenUsageOut)
    latency_ms: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)


class AgentConfigChange(_Inbound):
    """``agent-config``: the full configuration of an agent after a change. Key: ``agent_id``."""

    agent_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    config: dict[str, Any]
    updated_at: datetime = Field(default_factory=utcnow)


class DeadLetter(_Outbound):
    """``dlq``: a record (or a whole batch) that could not be processed, with the reason and the original bytes
    (cut to ``DEAD_LETTER_RAW_BYTES``, so a dead letter always fits the producer's request limit)."""

    source_topic: str
    partition: int
    offset: int = Field(description="Offset of the record; for an undecodable batch, its first offset")
    last_offset: int | None = Field(
        None, description="Last offset of an undecodable batch (every offset from offset to last_offset was skipped)"
    )
    key: str | None = Field(None, description=f"The record key as text, cut to {DEAD_LETTER_KEY_CHARS} characters")
    error: str = Field(description=f"The reason, cut to {DEAD_LETTER_ERROR_CHARS} characters")
    raw: str = Field(
        description=f"The original value bytes, base64; at most the first {DEAD_LETTER_RAW_BYTES} bytes "
        "(raw_truncated says when cut); empty for an undecodable batch"
    )
    raw_size: int | None = Field(None, description="Size of the original value in bytes")
    raw_sha256: str | None = Field(None, description="sha256 (hex) of the whole original value")
    raw_truncated: bool = Field(False, description="raw holds only the first DEAD_LETTER_RAW_BYTES bytes")
    received_at: datetime = Field(default_factory=utcnow)


class EvaluationRequest(_Inbound):
    """``evaluation-requests``: ask for an offline evaluation of one agent. Key: ``agent_id``."""

    request_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    agent_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    reason: Literal["threshold", "schedule", "manual"] = "manual"
    message_count: int = 0
    window_start: datetime | None = None
    window_end: datetime | None = None
    dimensions: list[str] | None = None
    requested_at: datetime = Field(default_factory=utcnow)


class EvaluationSummary(_Outbound):
    """``evaluations`` (out): a summary per finished evaluation run. Key: ``agent_id``."""

    evaluation_run_id: str
    request_id: str | None = None
    agent_id: str
    status: Literal["completed", "failed"]
    dimensions: dict[str, float] = Field(default_factory=dict)
    overall_score: float | None = None
    sample_size: int = 0
    error: str | None = None
    completed_at: datetime = Field(default_factory=utcnow)


class Step(_Inbound):
    """``steps`` (in): the orchestrator is about to let ``agent_ids`` act. Key: ``run_id``."""

    run_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    channel: str | None = None
    step: int = Field(ge=0)
    agent_ids: list[str] = Field(default_factory=list, max_length=1000)
    sent_at: datetime | None = None


class DirectiveOut(_Outbound):
    agent_id: str
    kind: str = Field(description="repetition | anti_convergence | variety | <custom intervention name>")
    text: str
    evidence: str | dict[str, Any] | list[Any] | None = None
    timed_out: bool = False


class Directives(_Outbound):
    """``directives`` (out): exactly one record per step, even when empty. Key: ``run_id``."""

    run_id: str
    channel: str | None = None
    step: int
    directives: list[DirectiveOut] = Field(default_factory=list)
    latency_ms: float = 0.0


class Alert(_Outbound):
    """``alerts`` (out): the drift monitor found a stream whose mean moved by more than ``min_shift`` from its
    reference (anytime-valid at level ``alpha``), or revised an earlier alert's cause. Key: ``agent_id``."""

    alert_id: str = Field(description="Deterministic: the same stream alerting at the same observation, same id")
    agent_id: str = Field(description="The agent; '*anchors*' for the judge's anchor set")
    dimension: str
    source: Literal["gate", "evaluation", "anchor"] = Field(
        description="gate: first-attempt gate scores; evaluation: evaluation runs; anchor: the judge re-scoring "
        "the anchor set (judge minus reference)"
    )
    cause: Literal["agent", "judge", "unknown"] = Field(
        description="judge: the anchor set moved, or enough of the cast alerted in one guard window; "
        "unknown: no anchor set is configured"
    )
    direction: Literal["drop", "rise"]
    reference: float = Field(description="The stream's reference mean")
    recent_mean: float | None = Field(None, description="Mean of the observations since the reference was set")
    evidence: float = Field(description="Log of the detector's wealth; alerts at log(1/alpha)")
    alpha: float
    min_shift: float
    observation: int = Field(description="The stream's observation count at the alert")
    revised: bool = Field(False, description="True when this record changes the cause of an earlier alert")
    created_at: datetime = Field(default_factory=utcnow)


class ShadowChange(_Inbound):
    """``shadows`` (compacted): a shadow as stored after a change (start, stop, budget spent, promote). Key: its
    name. Workers keep the running ones and judge their samples beside the gate (docs/shadow.md)."""

    name: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    agents: str = Field(description="Glob over agent ids")
    propositions: str | None = Field(None, description="Candidate propositions tree; null: the agent's live one")
    judge: str | None = Field(None, description="Candidate judge spec; null: the agent's live one")
    settings: dict[str, Any] = Field(default_factory=dict, description="Candidate configuration keys")
    sample: float = Field(gt=0, le=1)
    budget_usd: float | None = None
    max_tokens: int | None = None
    status: Literal["running", "budget_spent", "stopped", "promoted"]
    created_at: datetime


class ShadowVerdict(CorrectionLog):
    """``shadow-verdicts`` (out): the candidate's verdict on one live attempt — the correction-log shape — with
    the shadow's name, the live verdict's id and a copy of the live verdict's figures. Key: ``agent_id``."""

    shadow: str
    live_verdict_id: str = Field(description="The live verdict's id: draft_id:attempt_number")
    live_decision: Decision
    live_dimension_scores: dict[str, dict[str, Any]] = Field(default_factory=dict)
    live_total_score: float | None = None
    live_token_usage: TokenUsageOut = Field(default_factory=TokenUsageOut)
    judge: str | None = Field(None, description="The candidate judge's name (scripted judges say so)")


def encode(model: BaseModel) -> bytes:
    return orjson.dumps(model.model_dump(mode="json"))


def decode(model: type[M], raw: bytes | None) -> M:
    """Parse and validate ``raw`` as ``model``; any problem is a :class:`PayloadError` with a readable reason."""
    if raw is None:
        raise PayloadError("empty record value")
    inbound = issubclass(model, _Inbound)
    if inbound and len(raw) > MAX_RECORD_BYTES:
        raise PayloadError(f"record too large: {len(raw)} bytes (the maximum is {MAX_RECORD_BYTES})")
    try:  # pydantic parses the JSON itself; the wire is strict (the models stay lax for Python callers)
        return model.model_validate_json(raw, strict=inbound)
    except ValidationError as exc:
        error = exc  # explained below, in our words
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise PayloadError(f"value is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PayloadError(f"value must be a JSON object, not {type(data).__name__}")
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in error.errors()[:5]
    )
    raise PayloadError(f"invalid {model.__name__}: {problems}") from None


#: Payload model of every topic (by topic name without prefix), for schemas and docs.
TOPIC_MODELS: dict[str, type[BaseModel]] = {
    "drafts": Draft,
    "verdicts": Verdict,
    "messages": Message,
    "correction-logs": CorrectionLog,
    "agent-config": AgentConfigChange,
    "dlq": DeadLetter,
    "evaluation-requests": EvaluationRequest,
    "evaluations": EvaluationSummary,
    "steps": Step,
    "directives": Directives,
    "alerts": Alert,
    "shadows": ShadowChange,
    "shadow-verdicts": ShadowVerdict,
}

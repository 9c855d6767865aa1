"""Shadow gating's pure core: what a shadow is, which drafts it samples, and when its budget is spent.

A *shadow* is a candidate (configuration keys, a propositions tree, a judge spec — any of them) judged beside
the live gate on a sample of the live drafts of the agents its glob pattern covers, after their live verdict
was sent (the plumbing is :mod:`streams.services.shadow`). Sampling is a hash of the shadow's name and the
draft id, so every attempt of a sampled draft is sampled, and a redelivered or re-read draft samples the same
way on any worker. The budget is counted in tokens and dollars of the candidate's judge calls; once either
limit is reached no new attempt is judged and the shadow's status becomes ``budget_spent``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Any

from pydantic import ValidationError

from engine.config_changes import check_config_keys
from engine.errors import ConfigurationError
from engine.ids import shown
from engine.models import AgentConfig, TokenUsage

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_PATTERN = re.compile(r"^[A-Za-z0-9._:@*?\[\]!-]{1,200}$")
#: keys a shadow names with their own options (--propositions, --judge), never with --set
CANDIDATE_KEYS = ("propositions", "judge")


class ShadowStatus(StrEnum):
    RUNNING = "running"
    BUDGET_SPENT = "budget_spent"
    STOPPED = "stopped"
    PROMOTED = "promoted"


@dataclass(frozen=True, slots=True)
class Shadow:
    """One shadow as stored (table ``shadows``) and announced (topic ``shadows``)."""

    name: str
    agents: str
    propositions: str | None = None
    judge: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    sample: float = 0.2
    budget_usd: float | None = None
    max_tokens: int | None = None
    status: ShadowStatus = ShadowStatus.RUNNING
    created_at: datetime | None = None

    @property
    def running(self) -> bool:
        return self.status is ShadowStatus.RUNNING

    def covers(self, agent_id: str) -> bool:
        return fnmatchcase(agent_id, self.agents)

    def candidate_config(self, live: AgentConfig) -> AgentConfig:
        """The agent's live configuration with the candidate's keys (and its tree and judge) applied."""
        changes = dict(self.settings)
        if self.propositions is not None:
            changes["propositions"] = self.propositions
        if self.judge is not None:
            changes["judge"] = self.judge
        return live.with_changes(changes) if changes else live


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ConfigurationError(
            f"invalid shadow name {shown(name)}: 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def check_pattern(pattern: str) -> str:
    """A glob over agent ids (``*``, ``?``, ``[...]`` and the agent id characters)."""
    if not _PATTERN.match(pattern):
        raise ConfigurationError(f"invalid agent pattern {shown(pattern)}: a glob over agent ids, e.g. 'michael*'")
    return pattern


def check_settings(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The candidate's keys, checked like ``drift config set`` (keys and each value's bounds)."""
    changes = dict(settings)
    check_config_keys(changes)
    for key in CANDIDATE_KEYS:
        if key in changes:
            raise ConfigurationError(f"shadow {name}: give '{key}' with --{key}, not --set")
    try:
        AgentConfig().with_changes(changes)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        value = shown(str(first.get("input", "")))
        raise ConfigurationError(f"invalid configuration for shadow {name}: {key} = {value}: {first['msg']}") from None
    return changes


def check_limits(sample: float, budget_usd: float | None, max_tokens: int | None) -> None:
    if not 0 < sample <= 1:
        raise ConfigurationError(f"--sample must be > 0 and <= 1, not {sample:g}")
    if budget_usd is not None and max_tokens is not None:
        raise ConfigurationError("give --budget-usd or --max-tokens, not both")
    if budget_usd is not None and not budget_usd > 0:
        raise ConfigurationError(f"--budget-usd must be > 0, not {budget_usd:g}")
    if max_tokens is not None and max_tokens <= 0:
        raise ConfigurationError(f"--max-tokens must be > 0, not {max_tokens}")


def sampled(name: str, draft_id: str, rate: float) -> bool:
    """Whether the shadow ``name`` judges the draft ``draft_id`` (all its attempts), at ``rate`` in (0, 1]."""
    if rate >= 1:
        return True
    digest = hashlib.blake2b(f"{name}\0{draft_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < rate * 2**64


def tokens_of(usage: TokenUsage) -> int:
    """The tokens a budget counts: every input, output and cache token."""
    return usage.input_tokens + usage.output_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


@dataclass(slots=True)
class Spend:
    """A shadow's spending so far (stored) plus what this batch added."""

    tokens: int = 0
    usd: float = 0.0

    def add(self, usage: TokenUsage, usd: float | None) -> None:
        self.tokens += tokens_of(usage)
        self.usd += usd or 0.0

    def exhausted(self, budget_usd: float | None, max_tokens: int | None) -> bool:
        """True once a limit is reached: no new attempt is judged after that."""
        return (max_tokens is not None and self.tokens >= max_tokens) or (
            budget_usd is not None and self.usd >= budget_usd
        )

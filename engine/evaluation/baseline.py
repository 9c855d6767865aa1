"""Golden baselines: one JSON file per agent, ``<baseline dir>/<agent_id>.json``.

A baseline records, per dimension, the score, the unit scores (per-message or per-channel, for the
bootstrap interval) and the content hash of the merged proposition set + persona it was computed with.
When the current content hash differs, the dimension is **stale**: the baseline measured something else
and is not compared. ``judge`` and ``messages_sha256`` say what produced it; a different judge or input is
reported as a note. Files hold no timestamp, so regenerating unchanged baselines gives identical files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.errors import ConfigurationError
from engine.evaluation.harness import AgentResult
from engine.evaluation.hashing import combined_hash
from engine.models import Dimension

BASELINE_VERSION = 1
_DIGITS = 4


class BaselineDimension(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    content_hash: str = Field(min_length=64, max_length=64)
    units: tuple[float, ...] = ()


class Baseline(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = BASELINE_VERSION
    agent_id: str = Field(min_length=1)
    agent_name: str = ""
    judge: str = ""
    messages_sha256: str | None = None
    content_hash: str = ""
    dimensions: dict[Dimension, BaselineDimension] = Field(default_factory=dict)


def baseline_path(directory: Path, agent_id: str) -> Path:
    return directory / f"{agent_id}.json"


def load_baseline(directory: Path, agent_id: str) -> Baseline | None:
    """The agent's baseline, None when there is no file; a malformed file is a configuration error."""
    path = baseline_path(directory, agent_id)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        baseline = Baseline.model_validate(data)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read the baseline: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ConfigurationError(f"{path}: {where}: {first['msg']}") from None
    if baseline.version != BASELINE_VERSION:
        raise ConfigurationError(f"{path}: baseline version {baseline.version} is not {BASELINE_VERSION}")
    if baseline.agent_id != agent_id:
        raise ConfigurationError(f"{path}: agent_id is {baseline.agent_id!r}, expected {agent_id!r}")
    return baseline


def baseline_from_result(result: AgentResult, judge: str, messages_sha256: str | None) -> Baseline:
    return Baseline(
        agent_id=result.agent_id,
        agent_name=result.agent_name,
        judge=judge,
        messages_sha256=messages_sha256,
        content_hash=result.content_hash,
        dimensions={
            d.dimension: BaselineDimension(
                score=round(d.score, _DIGITS),
                content_hash=d.content_hash,
                units=tuple(round(u, _DIGITS) for u in d.units),
            )
            for d in result.dimensions
        },
    )


def merge_baseline(old: Baseline | None, new: Baseline) -> Baseline:
    """``new`` with the dimensions of ``old`` it did not re-evaluate kept (same judge and input only)."""
    if old is None or (old.judge, old.messages_sha256) != (new.judge, new.messages_sha256):
        return new
    dimensions = {**old.dimensions, **new.dimensions}
    hashes = [d.content_hash for d in dimensions.values()]
    return new.model_copy(update={"dimensions": dimensions, "content_hash": combined_hash(hashes)})


def write_baseline(directory: Path, baseline: Baseline) -> Path:
    """Write (overwrite) the agent's baseline file; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = baseline_path(directory, baseline.agent_id)
    ordered = dict(sorted(baseline.dimensions.items(), key=lambda item: list(Dimension).index(item[0])))
    data = baseline.model_copy(update={"dimensions": ordered}).model_dump(mode="json")
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def refuse_foreign_baselines(olds: Mapping[str, Baseline | None], judge: str, messages_sha256: str | None) -> None:
    """Raise (before anything is written) when a stored baseline was made by another judge or conversation."""
    for agent_id, old in olds.items():
        if old is None:
            continue
        if old.judge and old.judge != judge:
            raise ConfigurationError(
                f"{agent_id}: the stored baseline was made by {old.judge}, not {judge}; pass --force to replace it"
            )
        if old.messages_sha256 and messages_sha256 and old.messages_sha256 != messages_sha256:
            raise ConfigurationError(
                f"{agent_id}: the stored baseline was made on another conversation; pass --force to replace it"
            )

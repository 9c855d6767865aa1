"""One frozen settings object, built once at the entry point from ``DRIFT_*`` variables and flags, passed down.

Secrets (the Anthropic key, the SASL password) are read from the environment only and are excluded from
``repr`` and from :meth:`Settings.public`, so they never reach logs or stats.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from engine.errors import ConfigurationError
from engine.redaction import mask_url

REPO_ROOT = Path(__file__).resolve().parent.parent
PROPOSITIONS_PACKAGE, EXAMPLES_PACKAGE = "persona_drift_propositions", "persona_drift_examples"
SIMULATIONS_PACKAGE = "persona_drift_simulations"


@cache
def package_data_dir(package: str, source_folder: str) -> Path:
    """The directory of a data package of the distribution (``propositions/`` and ``ops/examples/`` in the
    repository, mapped in pyproject.toml); a source checkout that is not installed uses the folder itself."""
    try:
        return Path(str(resources.files(package)))
    except ModuleNotFoundError:
        return REPO_ROOT / source_folder


def bundled_propositions() -> Path:
    """The bundled propositions directory, wherever the distribution is installed."""
    return package_data_dir(PROPOSITIONS_PACKAGE, "propositions")


def bundled_simulations() -> Path:
    """The bundled simulations directory (scenarios, population profiles, the tiny population)."""
    return package_data_dir(SIMULATIONS_PACKAGE, "simulations")


def bundled_example(name: str) -> Path:
    """A bundled example file (``office_conversation.jsonl`` for ``drift demo``)."""
    return package_data_dir(EXAMPLES_PACKAGE, "ops/examples") / name


BUNDLED_PROPOSITIONS = bundled_propositions()
DEFAULT_KAFKA_PORT = 9092
DEFAULT_PG_PORT = 5432
DEFAULT_DATA_DIR = Path(os.environ.get("XDG_STATE_HOME", str(Path.home() / ".local" / "state"))) / "persona-drift"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
#: bounds of DRIFT_AGENT_IDLE_TTL_S and DRIFT_PENDING_TTL_S (one second to one year)
MIN_TTL_S, MAX_TTL_S = 1.0, 365 * 86_400.0
#: settings that are secrets: never printed, masked by :meth:`Settings.public`
SECRET_FIELDS = frozenset({"kafka_sasl_password", "anthropic_api_key", "view_token"})


@dataclass(frozen=True)
class Settings:
    broker: str = f"127.0.0.1:{DEFAULT_KAFKA_PORT}"
    database_url: str = ""  # empty: the embedded database of `drift up` (see data_dir)
    topic_prefix: str = "drift."
    data_dir: Path = DEFAULT_DATA_DIR
    propositions_dir: Path = BUNDLED_PROPOSITIONS
    judge: str = ""  # empty: anthropic when ANTHROPIC_API_KEY is set, else offline
    anthropic_model: str = DEFAULT_ANTHROPIC_MODEL
    anthropic_base_url: str | None = None
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_model: str = "local"
    judge_deadline_s: float = 5.0
    connect_timeout_s: float = 5.0  # how long a command waits for an unreachable broker or database
    prices_file: str = ""  # YAML price table (dollars per million tokens) over the bundled one (engine.pricing)
    actor: str = ""  # empty: anthropic when ANTHROPIC_API_KEY is set, else scripted (simulations)
    actor_deadline_s: float = 60.0  # one actor/text-model completion, retries included
    actor_concurrency: int = 32  # text-model calls in flight per process
    judge_concurrency: int = 64
    gate_parallel: bool = True
    gate_share_prefix: bool = False  # staged: one dimension writes the evidence to the judge's cache, then the rest
    sinks: bool = True  # run the Postgres sinks inside the worker (false: run `drift sinks` separately)
    step_deadline_s: float = 10.0
    fetch_max_wait_ms: int = 10
    web_host: str = "127.0.0.1"
    web_port: int = 6066
    eval_window_s: float = 3600.0
    eval_threshold: int = 50
    eval_cron: str = "0 3 * * *"
    eval_deadline_s: float = 900.0
    eval_judge_share: float = 0.125  # share of DRIFT_JUDGE_CONCURRENCY evaluations may use (engine.judges.budget)
    agent_idle_ttl_s: float = 86_400.0  # per-agent state of a worker is dropped after this long idle
    pending_ttl_s: float = 3_600.0  # earlier attempts of a draft (and its verdict records) are kept this long
    restore_window_s: float = 900.0  # a table restore reads this much changelog tail (0: all of it); see docs
    restore_checkpoint_s: float = 10.0  # how often a worker records its changelog end offsets (restore index)
    kafka_security_protocol: str = "PLAINTEXT"
    kafka_sasl_mechanism: str | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: str | None = field(default=None, repr=False)
    kafka_ca_file: str | None = None
    kafka_compression: str = "none"  # codec of the client SDK's producer (the worker decodes every codec)
    anthropic_api_key: str | None = field(default=None, repr=False)
    view_token: str | None = field(default=None, repr=False)  # drift view beyond loopback needs it

    def __post_init__(self) -> None:
        for name in ("agent_idle_ttl_s", "pending_ttl_s"):
            value = getattr(self, name)
            if not MIN_TTL_S <= value <= MAX_TTL_S:
                raise ConfigurationError(
                    f"DRIFT_{name.upper()} must be between {MIN_TTL_S:g} and {MAX_TTL_S:g} seconds, not {value!r}"
                )
        if self.kafka_security_protocol not in SECURITY_PROTOCOLS:
            raise ConfigurationError(
                f"DRIFT_KAFKA_SECURITY_PROTOCOL must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {self.kafka_security_protocol!r}"
            )
        if self.kafka_compression not in COMPRESSION_TYPES:
            raise ConfigurationError(
                f"DRIFT_KAFKA_COMPRESSION must be one of {', '.join(COMPRESSION_TYPES)}, not {self.kafka_compression!r}"
            )
        if not 0.0 < self.eval_judge_share < 1.0:
            raise ConfigurationError(
                f"DRIFT_EVAL_JUDGE_SHARE must be between 0 and 1 (exclusive), not {self.eval_judge_share!r}"
            )
        if self.kafka_sasl_mechanism is not None and self.kafka_sasl_mechanism not in SASL_MECHANISMS:
            raise ConfigurationError(
                f"DRIFT_KAFKA_SASL_MECHANISM must be one of {', '.join(SASL_MECHANISMS)}, "
                f"not {self.kafka_sasl_mechanism!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``DRIFT_<FIELD>`` variables, then ``overrides`` (CLI flags; None means unset)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = "ANTHROPIC_API_KEY" if f.name == "anthropic_api_key" else f"DRIFT_{f.name.upper()}"
            raw = env.get(name)
            if raw is not None and raw != "":
                values[f.name] = _coerce(f.name, raw, cls.__dataclass_fields__[f.name].default)
        if "database_url" not in values and env.get("DATABASE_URL"):
            values["database_url"] = env["DATABASE_URL"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"

    def public(self) -> dict[str, Any]:
        """The settings with every secret replaced by a marker: safe to print and log."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in SECRET_FIELDS:
                value = "***" if value else None
            elif f.name == "database_url":
                value = mask_url(str(value))
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out

    def database(self) -> str:
        """The database URL: the configured one, else the embedded database ``drift up`` starts."""
        return self.database_url or embedded_database_url(self.data_dir)

    def effective_actor(self) -> str:
        if self.actor:
            return self.actor
        return "anthropic" if self.anthropic_api_key else "scripted"

    def effective_judge(self) -> str:
        if self.judge:
            return self.judge
        return "anthropic" if self.anthropic_api_key else "offline"


def embedded_database_url(data_dir: Path) -> str:
    """The URL of the embedded PostgreSQL (``pgserver``) kept in ``data_dir/pgdata`` (a Unix socket)."""
    return f"postgresql://postgres:@/postgres?host={data_dir / 'pgdata'}"


def _coerce(name: str, raw: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if raw.lower() not in {"1", "0", "true", "false", "yes", "no"}:
                raise ValueError(raw)
            return raw.lower() in {"1", "true", "yes"}
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path):
            return Path(raw)
    except ValueError:
        raise ConfigurationError(f"DRIFT_{name.upper()}: cannot read {raw!r} as {type(default).__name__}") from None
    return raw

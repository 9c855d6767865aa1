"""One frozen settings object, built once at the entry point from ``DRIFT_*`` variables and flags, passed down.

:class:`Settings` is a pydantic-settings model: every field is typed and bounded here, once (finite numbers,
positive timeouts, ports in range, ``Literal`` choices), so nothing downstream checks a setting again. A bad
value, from the environment, a flag or code, raises :class:`~engine.errors.ConfigurationError` with one line
per bad field, ``DRIFT_X: …``, which the CLI prints as ``drift: DRIFT_X: …`` and exits 2 on.

Only :meth:`Settings.from_env` reads the environment; ``Settings(...)`` is the defaults and its arguments.
Secrets (the Anthropic key, the SASL password, the view token) are :class:`~pydantic.SecretStr`: masked in
``repr``, in error messages and in :meth:`Settings.public`, so they never reach logs or stats.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, AliasChoices, Field, SecretStr, ValidationError, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict
from pydantic_settings.sources.utils import parse_env_vars

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
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"]
SECURITY_PROTOCOLS: tuple[str, ...] = get_args(SecurityProtocol)
SASL_MECHANISMS: tuple[str, ...] = get_args(SaslMechanism)
COMPRESSION_TYPES: tuple[str, ...] = get_args(Compression)
#: bounds of DRIFT_AGENT_IDLE_TTL_S and DRIFT_PENDING_TTL_S (one second to one year)
MIN_TTL_S, MAX_TTL_S = 1.0, 365 * 86_400.0
#: settings that are secrets: never printed, masked by :meth:`Settings.public`
SECRET_FIELDS = frozenset({"kafka_sasl_password", "anthropic_api_key", "view_token", "alert_webhook_url"})
#: the variable of a field that is not ``DRIFT_<FIELD>``
OWN_VARIABLES = {"anthropic_api_key": "ANTHROPIC_API_KEY"}


def _is_crontab(value: str) -> str:
    from croniter import croniter  # here: a tenth of a second of every command's start, for one optional field

    if not croniter.is_valid(value):
        raise ValueError("must be a crontab expression (minute hour day month weekday)")
    return value


Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1)]
TtlSeconds = Annotated[float, Field(ge=MIN_TTL_S, le=MAX_TTL_S, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


class Settings(BaseSettings):
    """Every setting of a ``drift`` process; the variable of a field is ``DRIFT_<FIELD>`` (docs/reference.md is
    generated from these fields and their docstrings: ``make reference``)."""

    model_config = SettingsConfigDict(
        env_prefix="DRIFT_", env_ignore_empty=True, frozen=True, extra="forbid", populate_by_name=True,
        use_attribute_docstrings=True, validate_default=True,
    )  # fmt: skip

    broker: Name = f"127.0.0.1:{DEFAULT_KAFKA_PORT}"
    """Kafka bootstrap server (`--broker`)."""
    database_url: str = Field("", validation_alias=AliasChoices("DRIFT_DATABASE_URL", "DATABASE_URL"))
    """PostgreSQL URL (`--database`); `DATABASE_URL` is read when this is unset; printed with the password masked."""
    topic_prefix: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")] = "drift."
    """Prefix of every topic and consumer group (`--prefix`): letters, digits, `.`, `_` and `-`."""
    data_dir: Path = DEFAULT_DATA_DIR
    """Where the embedded broker and database keep their files (`--data-dir`)."""
    propositions_dir: Path = BUNDLED_PROPOSITIONS
    """Propositions tree: personas, dimensions, interventions, baselines (`--propositions`)."""
    judge: str = ""
    """Judge (`--judge`): `anthropic[:MODEL]`, `openai-compatible[:MODEL]`, `offline`, `scripted:FILE`, `replay:FILE`"""
    anthropic_model: Name = DEFAULT_ANTHROPIC_MODEL
    """Model of the Anthropic judge."""
    anthropic_base_url: Name | None = None
    """Another Messages-API endpoint (a proxy, a test server)."""
    openai_base_url: Name = "http://127.0.0.1:8000/v1"
    """Endpoint of the OpenAI-compatible judge (vLLM, Ollama, llama.cpp) and of the embeddings of `drift
    metareason run --embeddings openai-compatible`."""
    openai_model: Name = "local"
    """Model name sent to that endpoint."""
    judge_deadline_s: Seconds = 5.0
    """Deadline of one judge evaluation (retries, repair and double check included; it starts once the call holds
    one of the `DRIFT_JUDGE_CONCURRENCY` slots); the gate also bounds each dimension by it from the moment the
    draft is judged (queueing for a slot included): a dimension without a score by then fails open and is
    marked `timed_out`."""
    connect_timeout_s: Seconds = 5.0
    """How long a command waits for an unreachable broker or database before it stops with one line (every
    command: `drift check`, `drift simulate`, `drift tail`, `drift replay`, `drift worker`, `drift sinks`, `drift
    config set`, `drift topics create`, …)."""
    prices_file: str = ""
    """YAML price table, dollars per million tokens per model, over the bundled one (`claude-haiku-4-5: {input:
    1.0, output: 5.0, cache_read: 0.1, cache_write: 1.25}`); used for the costs `drift stats` and `drift eval
    run` print beside tokens. A model with no price shows cost `unknown`, never 0."""
    actor: str = ""
    """Who speaks in simulations and population generation (`--actor`): `anthropic[:MODEL]`,
    `openai-compatible[:MODEL]`, `scripted[:RULES.yaml]`; empty = `anthropic` when `ANTHROPIC_API_KEY` is set,
    else `scripted` ([simulations](simulations.md))."""
    actor_deadline_s: Seconds = 60.0
    """Deadline of one actor or text-model completion, retries included."""
    actor_concurrency: Count = 32
    """Actor and text-model calls in flight at once, per text model."""
    judge_concurrency: Annotated[int, Field(ge=2)] = 64
    """Judge calls in flight at once, per process; a worker's gate, steps and evaluations share this one budget
    (so at least 2)."""
    gate_parallel: bool = True
    """Judge a draft's dimensions in parallel (`false`: one after the other, as TinyTroupe does)."""
    sinks: bool = True
    """Run the PostgreSQL sinks inside the worker (`false`, or `--no-sinks`: run `drift sinks` separately)."""
    step_deadline_s: Seconds = 10.0
    """Deadline of one orchestrator step's interventions."""
    fetch_max_wait_ms: Annotated[int, Field(ge=0, le=60_000)] = 10
    """The verdict path's starting fetch wait (the embedded broker's long poll sleeps about half of it per hop); it
    doubles, up to 2 s, while the broker answers without records it has (docs/known-issues.md)."""
    fetch_brisk_wait_ms: Annotated[int, Field(ge=0, le=60_000)] = 3
    """The verdict path's fetch wait while records flow (one came within a second) or a client awaits a reply, if
    shorter than `DRIFT_FETCH_MAX_WAIT_MS`: a hop on the embedded broker takes about half of it. It grows alike."""
    beside_fetch_max_wait_ms: Annotated[int, Field(ge=0, le=60_000)] = 200
    """The starting fetch wait of the consumers beside the verdict path (the sinks, the drift monitor, the shadow
    lane): their records arrive up to about half of it later, and an idle worker polls the broker far less
    (each at 10 ms cost about 3 % of a core) ([operations](operations.md#cpu-at-rest-fetch-waits))."""
    web_host: Name = "127.0.0.1"
    """Address of a worker's `/health`, `/stats` and `/metrics`."""
    web_port: Annotated[int, Field(ge=1, le=65_535)] = 6066
    """Port of that web server (a second worker on the host takes any free port)."""
    eval_window_s: Seconds = 3600.0
    """Periodic evaluation: the window of messages evaluated."""
    eval_threshold: Count = 50
    """Periodic evaluation: evaluate an agent once it has this many new messages."""
    eval_cron: Annotated[str, AfterValidator(_is_crontab)] = "0 3 * * *"
    """Periodic evaluation: when to evaluate every due agent (cron syntax)."""
    eval_deadline_s: Seconds = 900.0
    """Deadline of one evaluation run."""
    eval_judge_share: Annotated[float, Field(gt=0, lt=1)] = 0.125
    """Share of `DRIFT_JUDGE_CONCURRENCY` the offline evaluations of a worker may use (at least one slot, and the
    gate keeps at least one). The gate and the steps are never held below the rest; they borrow the
    evaluations' slots while those are idle."""
    agent_idle_ttl_s: TtlSeconds = 86_400.0
    """A worker drops an agent's state (configuration, recent messages, history) once it has been idle this long
    (24 h by default), with changelog tombstones; a returning agent starts with an empty similarity window and
    its stored configuration."""
    pending_ttl_s: TtlSeconds = 3_600.0
    """`pending-attempts` (earlier attempts of a draft) and `verdict-records` (redelivery idempotence) entries
    expire this long after their last write (1 h by default); a later attempt is still judged, among the
    attempts still known."""
    restore_window_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 900.0
    """A restore reads only this much changelog tail, the recent messages from PostgreSQL; must exceed the sinks'
    lag ([operations](operations.md#start-up-and-restarts)); `0`: whole changelogs, Faust's own restore."""
    restore_checkpoint_s: Seconds = 10.0
    """How often a worker records its changelogs' end offsets (the index a bounded restore starts from)."""
    group_session_timeout_s: Seconds = 4.0
    """A worker that stops heartbeating (a hung or lost host) loses its partitions after this long (a killed worker
    is ended by its peers at once). The embedded broker holds every JoinGroup in 1 s steps until half of it has
    passed: `4` is the longest session whose joins take 2 s (at `6`: 3 s), a worker's start included. A Kafka with
    the stock `group.min.session.timeout.ms` refuses less than `6` (compose's Kafka allows `3`): set `6` there
    ([operations](operations.md#rolling-deploys-and-scale-events))."""
    group_heartbeat_s: Seconds = 1.0
    """A worker's heartbeat to its consumer group; a member notices a rebalance at its next heartbeat."""
    group_rebalance_timeout_s: Seconds = 5.0
    """How long the group waits for every member to rejoin during a rebalance."""
    group_eager: bool = False
    """Revoke every partition before a rebalance's join, as aiokafka does; off: a worker goes on judging during
    the join, its partitions claimed in PostgreSQL ([operations](operations.md#partitions-that-do-not-move))."""
    group_instance_id: str = ""
    """Static membership (Kafka's `group.instance.id`, one distinct value per worker): a worker restarted within
    the session timeout gets its partitions back without a rebalance, on Kafka ≥ 2.3; the embedded broker does
    not honour it ([operations](operations.md#rolling-deploys-and-scale-events)); empty: off."""
    group_leader_leaves: bool = False
    """A stopping group leader always sends LeaveGroup. Off for the embedded broker, which keeps a departed leader
    ([known issues](known-issues.md#a-leader-that-leaves-a-forming-group-stays-its-leader-no-member-ever-syncs-again)):
    there a leader leaves only while its group is formed, and the others end a departed leader the broker kept.
    On with Kafka (compose). The sinks', the monitor's and the shadow lane's groups follow it too."""
    ready_bound_s: Seconds = 30.0
    """A worker still starting, joining its consumer group, restoring its tables or resuming after this long logs
    one warning line with the reason, and `/health` names the phase with its duration (`"waiting_for":
    "restoring tables: 29766 changelog records left (largest: verdict-records[0] 8705) (for 41 s)"`); after the
    worker was ready once, a rebalance that outlasts it makes `/health` answer 503 with the reason."""
    kafka_security_protocol: SecurityProtocol = "PLAINTEXT"
    """Security protocol to the broker."""
    kafka_sasl_mechanism: SaslMechanism | None = None
    """SASL mechanism."""
    kafka_sasl_username: Name | None = None
    """SASL user."""
    kafka_sasl_password: SecretStr | None = None
    """SASL password; never printed."""
    kafka_ca_file: Name | None = None
    """CA bundle for TLS to the broker."""
    kafka_compression: Compression = "none"
    """Codec of the client SDK's producer (the worker decodes every codec whatever this says)."""
    anthropic_api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("ANTHROPIC_API_KEY"))
    """The Anthropic key; read from the environment only, never printed."""
    view_token: SecretStr | None = None
    """`drift view` bound beyond 127.0.0.1 requires it (the browser presents it once at the login URL); never
    printed."""
    gate_share_prefix: bool = False
    """Staged dimensions: one dimension of the draft writes the evidence, the draft and its persona to the
    judge's cache and the others start once it has answered (cheaper, but a draft waits for two judge calls:
    off by default; docs/gate-design.md)."""
    gate_window: Literal["sliding", "hopping"] = "sliding"
    """The LLM gate's trajectory window: `sliding` shows the first 5 and the last 10 events (TinyTroupe's);
    `hopping` the first 5 and every event since an anchor moving in steps of 10 (10 to 19 recent events, a
    superset), so consecutive checks of a conversation extend each other's prompt and the judge's cache serves
    it (docs/gate-design.md "Judge cost")."""
    monitor_reference_n: Annotated[int, Field(ge=1, le=100_000)] = 50
    """Drift monitor: a stream without a usable golden baseline takes the mean of its first N observations as its
    reference ([monitor](monitor.md))."""
    monitor_guard_s: Annotated[float, Field(ge=1, le=MAX_TTL_S, allow_inf_nan=False)] = 3600.0
    """Drift monitor: the guard window of attribution — an anchor alarm, or `DRIFT_MONITOR_CAST_SHARE` of a
    dimension's agents alerting, within it makes an alert the judge's."""
    monitor_cast_share: Annotated[float, Field(ge=0.01, le=1, allow_inf_nan=False)] = 0.5
    """Drift monitor: the share of a dimension's monitored agents (at least 3) alerting within the guard window
    that makes their alerts the judge's."""
    monitor_anchors: str = ""
    """Drift monitor: the anchor set, a label file in `drift eval calibrate`'s JSONL format; unset: 20 committed
    messages per dimension, with the judge's first scores as their references."""
    monitor_anchor_share: Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)] = 0.02
    """Drift monitor: at most this share of a worker's judge calls re-score anchors (0 turns the anchors off)."""
    monitor_anchor_interval_s: Annotated[float, Field(ge=0.1, le=MAX_TTL_S, allow_inf_nan=False)] = 60.0
    """Drift monitor: at most one anchor re-score per interval per worker."""
    shadow_judge_slots: Annotated[int, Field(ge=1, le=256)] = 2
    """Shadow gating: judge calls in flight for the shadows' candidates, slots of their own beside
    `DRIFT_JUDGE_CONCURRENCY` (a shadow never takes a slot the gate could use) ([shadow](shadow.md))."""
    shadow_max_lag_s: Annotated[float, Field(ge=1, le=MAX_TTL_S, allow_inf_nan=False)] = 300.0
    """Shadow gating: a sampled draft older than this when the shadow lane reaches it is skipped and counted
    (the lane has fallen behind; it never queues more)."""
    alert_webhook_url: SecretStr | None = None
    """Drift monitor: a JSON POST per alert (Slack-compatible `text` field), 5 s timeout, 3 tries, off the gate's
    path; never printed or logged."""

    @model_validator(mode="wrap")
    @classmethod
    def _one_line_per_bad_value(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            raise ConfigurationError("\n".join(_describe(e) for e in exc.errors())) from None

    @model_validator(mode="after")
    def _sasl_is_complete(self) -> Settings:
        if self.kafka_security_protocol.startswith("SASL"):
            missing = [variable(n) for n in ("kafka_sasl_mechanism", "kafka_sasl_username") if not getattr(self, n)]
            if missing:  # ConfigurationError: not a ValueError, so pydantic passes it through as it is
                raise ConfigurationError(
                    f"{missing[0]}: must be set with DRIFT_KAFKA_SECURITY_PROTOCOL={self.kafka_security_protocol} "
                    "(SASL needs DRIFT_KAFKA_SASL_MECHANISM, DRIFT_KAFKA_SASL_USERNAME and DRIFT_KAFKA_SASL_PASSWORD)"
                )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the arguments: the environment is read by :meth:`from_env`, at the entry point."""
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``DRIFT_<FIELD>`` variables, then ``overrides`` (CLI flags; None means unset)."""
        found = _Environment(cls, os.environ if environ is None else environ)()
        values = {_FIELD_OF.get(key, key): value for key, value in found.items() if key not in OWN_VARIABLES}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (None means unchanged), validated like the original."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**(values | {k: v for k, v in changes.items() if v is not None}))

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"

    def public(self) -> dict[str, Any]:
        """The settings with every secret replaced by a marker: safe to print and log."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in SECRET_FIELDS:
                value = "***" if value else None
            elif name == "database_url":
                value = mask_url(str(value))
            out[name] = str(value) if isinstance(value, Path) else value
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


def variable(name: str) -> str:
    """The environment variable of the field ``name``."""
    return OWN_VARIABLES.get(name, f"DRIFT_{name.upper()}")


#: a field's variable names as the environment source reports them, to field names (flags override by name)
_FIELD_OF = {
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "DRIFT_DATABASE_URL": "database_url",
    "DATABASE_URL": "database_url",
}
_PARSING = {"int_parsing": "int", "int_from_float": "int", "float_parsing": "float", "bool_parsing": "bool"}


class _Environment(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (tests pass their own, never the real one)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


def _describe(error: ErrorDetails) -> str:
    """``DRIFT_X: …`` for one validation error; a secret's value is never shown."""
    field = str(error["loc"][0]) if error["loc"] else ""
    field = _FIELD_OF.get(field, field)
    name = variable(field) if field in Settings.model_fields else field
    raw = error.get("input")
    shown = "" if field in SECRET_FIELDS else f", not {_shown(raw)}"
    if error["type"] in _PARSING and field not in SECRET_FIELDS:
        return f"{name}: cannot read {_shown(raw)} as {_PARSING[error['type']]}"
    if error["type"] == "literal_error":
        choices = get_args(Settings.model_fields[field].annotation)
        options = [str(c) for arg in choices for c in (get_args(arg) or (arg,)) if c is not type(None)]
        return f"{name}: must be one of {', '.join(options)}{shown}"
    if error["type"] == "string_pattern_mismatch":
        return f"{name}: must hold only letters, digits, '.', '_' and '-'{shown}"
    message = re.sub(r"^(Input|String|Value) should", "must", error["msg"].removeprefix("Value error, "))
    return f"{name}: {message}{shown}"


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return repr(value)


def embedded_database_url(data_dir: Path) -> str:
    """The URL of the embedded PostgreSQL (``pgserver``) kept in ``data_dir/pgdata`` (a Unix socket)."""
    return f"postgresql://postgres:@/postgres?host={data_dir.absolute() / 'pgdata'}"  # a relative host is a name

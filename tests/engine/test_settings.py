"""Settings: DRIFT_* variables with type coercion, CLI overrides, secrets kept out of repr and public()."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from engine.errors import ConfigurationError
from engine.redaction import mask_url
from engine.settings import SASL_MECHANISMS, SECURITY_PROTOCOLS, Settings, embedded_database_url

EnvFactory = Callable[..., Settings]

API_KEY = "sk-ant-test-0123456789abcdef"
SASL_PASSWORD = "sasl-pa55word-xyz"
DB_PASSWORD = "hunter2-db-secret"


@pytest.fixture
def from_env() -> EnvFactory:
    """from_env(env_dict, **overrides): settings from an explicit environment (never the real one)."""

    def make(env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        return Settings.from_env(env or {}, **overrides)

    return make


@pytest.fixture
def secret_settings(from_env: EnvFactory) -> Settings:
    return from_env(
        {
            "ANTHROPIC_API_KEY": API_KEY,
            "DRIFT_KAFKA_SASL_PASSWORD": SASL_PASSWORD,
            "DRIFT_KAFKA_SASL_USERNAME": "drift",
            "DRIFT_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "DRIFT_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "DRIFT_DATABASE_URL": f"postgresql://drift:{DB_PASSWORD}@db.internal:5432/drift",
        }
    )


# --- reading the environment ----------------------------------------------------------------------------


def test_an_empty_environment_gives_the_defaults(from_env: EnvFactory) -> None:
    assert from_env() == Settings()


def test_values_are_coerced_to_the_field_types(from_env: EnvFactory) -> None:
    settings = from_env(
        {
            "DRIFT_BROKER": "kafka:9093",
            "DRIFT_JUDGE_CONCURRENCY": "8",
            "DRIFT_JUDGE_DEADLINE_S": "2.5",
            "DRIFT_FETCH_MAX_WAIT_MS": "25",
            "DRIFT_DATA_DIR": "/var/lib/drift",
            "DRIFT_ANTHROPIC_BASE_URL": "http://127.0.0.1:9999",
        }
    )
    assert settings.broker == "kafka:9093"
    assert settings.judge_concurrency == 8 and isinstance(settings.judge_concurrency, int)
    assert settings.judge_deadline_s == 2.5
    assert settings.fetch_max_wait_ms == 25
    assert settings.data_dir == Path("/var/lib/drift")
    assert settings.anthropic_base_url == "http://127.0.0.1:9999"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("TRUE", True), ("yes", True), ("0", False), ("false", False), ("No", False)],
)
def test_booleans_accept_the_usual_spellings(raw: str, expected: bool, from_env: EnvFactory) -> None:
    assert from_env({"DRIFT_GATE_PARALLEL": raw}).gate_parallel is expected


def test_an_integral_float_is_read_as_a_float(from_env: EnvFactory) -> None:
    settings = from_env({"DRIFT_EVAL_WINDOW_S": "60"})
    assert settings.eval_window_s == 60.0 and isinstance(settings.eval_window_s, float)


@pytest.mark.parametrize(
    ("variable", "raw", "type_name"),
    [
        ("DRIFT_GATE_PARALLEL", "maybe", "bool"),
        ("DRIFT_JUDGE_CONCURRENCY", "eight", "int"),
        ("DRIFT_JUDGE_CONCURRENCY", "2.5", "int"),
        ("DRIFT_JUDGE_DEADLINE_S", "fast", "float"),
        ("DRIFT_WEB_PORT", "60 66", "int"),
    ],
)
def test_unreadable_values_are_configuration_errors(
    variable: str, raw: str, type_name: str, from_env: EnvFactory
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        from_env({variable: raw})
    message = str(caught.value)
    assert variable in message and repr(raw) in message and type_name in message


def test_empty_variables_count_as_unset(from_env: EnvFactory) -> None:
    assert from_env({"DRIFT_JUDGE_CONCURRENCY": "", "DRIFT_BROKER": ""}) == Settings()


def test_cli_overrides_win_and_none_is_ignored(from_env: EnvFactory) -> None:
    env = {"DRIFT_BROKER": "from-env:9092", "DRIFT_TOPIC_PREFIX": "env."}
    settings = from_env(env, broker="from-flag:9092", topic_prefix=None, judge_concurrency=3)
    assert settings.broker == "from-flag:9092"
    assert settings.topic_prefix == "env."
    assert settings.judge_concurrency == 3


def test_with_ignores_none_and_keeps_the_rest(from_env: EnvFactory) -> None:
    base = from_env({"DRIFT_BROKER": "a:1"})
    changed = base.with_(judge="offline", broker=None)
    assert (changed.judge, changed.broker) == ("offline", "a:1")
    assert base.judge == ""  # frozen: the original is untouched


def test_database_url_falls_back_to_the_conventional_variable(from_env: EnvFactory) -> None:
    assert from_env({"DATABASE_URL": "postgresql://a@h/db"}).database_url == "postgresql://a@h/db"
    both = from_env({"DATABASE_URL": "postgresql://a@h/db", "DRIFT_DATABASE_URL": "postgresql://b@h/db"})
    assert both.database_url == "postgresql://b@h/db"


def test_topic_names_carry_the_prefix(from_env: EnvFactory) -> None:
    assert from_env({"DRIFT_TOPIC_PREFIX": "t1."}).topic("drafts") == "t1.drafts"


# --- secrets --------------------------------------------------------------------------------------------


def test_the_api_key_is_read_from_its_standard_variable(secret_settings: Settings, from_env: EnvFactory) -> None:
    assert secret_settings.anthropic_api_key is not None
    assert secret_settings.anthropic_api_key.get_secret_value() == API_KEY
    assert from_env({"DRIFT_ANTHROPIC_API_KEY": API_KEY}).anthropic_api_key is None


def test_secrets_never_appear_in_repr(secret_settings: Settings) -> None:
    text = repr(secret_settings)
    assert API_KEY not in text and SASL_PASSWORD not in text
    assert "kafka_sasl_username='drift'" in text  # repr still shows the non-secret settings


def test_public_hides_every_secret(secret_settings: Settings) -> None:
    public = secret_settings.public()
    dumped = json.dumps(public)  # also: every value is JSON-ready (paths become strings)
    for secret in (API_KEY, SASL_PASSWORD, DB_PASSWORD):
        assert secret not in dumped
    assert public["anthropic_api_key"] == "***" and public["kafka_sasl_password"] == "***"
    assert public["database_url"] == "postgresql://drift:***@db.internal:5432/drift"
    assert public["kafka_sasl_username"] == "drift"
    assert set(public) == set(Settings.model_fields)


def test_public_shows_unset_secrets_as_none(from_env: EnvFactory) -> None:
    public = from_env().public()
    assert public["anthropic_api_key"] is None and public["kafka_sasl_password"] is None
    assert isinstance(public["data_dir"], str)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://drift:pw@db:5432/drift", "postgresql://drift:***@db:5432/drift"),
        ("postgresql://drift:p@ss@db/drift", "postgresql://drift:***@db/drift"),  # '@' inside the password
        ("postgresql://drift@db/drift", "postgresql://drift@db/drift"),  # no password
        ("postgresql://db/drift", "postgresql://db/drift"),
        ("not a url", "not a url"),
    ],
)
def test_mask_url(url: str, expected: str) -> None:
    assert mask_url(url) == expected


@given(st.text(alphabet=string.ascii_letters + string.digits + "@:!#$%^&*()-_=+?.,;~é", min_size=4))
def test_redact_url_never_leaks_the_password(password: str) -> None:
    rest = "drift@db.example.org:5432/drift?sslmode=require"
    assume(password not in f"postgresql://{rest}")
    redacted = mask_url(f"postgresql://drift:{password}@db.example.org:5432/drift?sslmode=require")
    assert password not in redacted
    assert redacted.endswith("@db.example.org:5432/drift?sslmode=require")


# --- derived values and validation ----------------------------------------------------------------------


def test_database_falls_back_to_the_embedded_one_under_the_data_dir(tmp_path: Path, from_env: EnvFactory) -> None:
    settings = from_env({"DRIFT_DATA_DIR": str(tmp_path)})
    assert settings.database() == embedded_database_url(tmp_path)
    assert str(tmp_path / "pgdata") in settings.database()
    configured = settings.with_(database_url="postgresql://u:p@h/db")
    assert configured.database() == "postgresql://u:p@h/db"


@pytest.mark.parametrize("protocol", SECURITY_PROTOCOLS)
def test_known_security_protocols_are_accepted(protocol: str) -> None:
    sasl = {"kafka_sasl_mechanism": "PLAIN", "kafka_sasl_username": "u"} if protocol.startswith("SASL") else {}
    assert Settings(kafka_security_protocol=protocol, **sasl).kafka_security_protocol == protocol  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ["TLS", "plaintext", ""])
def test_an_unknown_security_protocol_is_an_error(protocol: str) -> None:
    with pytest.raises(ConfigurationError, match="DRIFT_KAFKA_SECURITY_PROTOCOL"):
        Settings(kafka_security_protocol=protocol)


@pytest.mark.parametrize("mechanism", SASL_MECHANISMS)
def test_known_sasl_mechanisms_are_accepted(mechanism: str, from_env: EnvFactory) -> None:
    assert from_env({"DRIFT_KAFKA_SASL_MECHANISM": mechanism}).kafka_sasl_mechanism == mechanism


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "plain"])
def test_an_unknown_sasl_mechanism_is_an_error(mechanism: str, from_env: EnvFactory) -> None:
    with pytest.raises(ConfigurationError, match="DRIFT_KAFKA_SASL_MECHANISM"):
        from_env({"DRIFT_KAFKA_SASL_MECHANISM": mechanism})


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "offline"),
        ({"ANTHROPIC_API_KEY": API_KEY}, "anthropic"),
        ({"ANTHROPIC_API_KEY": API_KEY, "DRIFT_JUDGE": "scripted:rules.yaml"}, "scripted:rules.yaml"),
        ({"DRIFT_JUDGE": "openai"}, "openai"),
    ],
)
def test_effective_judge(env: dict[str, str], expected: str, from_env: EnvFactory) -> None:
    assert from_env(env).effective_judge() == expected


def test_the_sdk_compression_codec_is_checked(from_env: EnvFactory) -> None:
    assert from_env({"DRIFT_KAFKA_COMPRESSION": "zstd"}).kafka_compression == "zstd"
    with pytest.raises(ConfigurationError, match="DRIFT_KAFKA_COMPRESSION: must be one of none, gzip, snappy"):
        from_env({"DRIFT_KAFKA_COMPRESSION": "brotli"})


@pytest.mark.parametrize("name", ["DRIFT_AGENT_IDLE_TTL_S", "DRIFT_PENDING_TTL_S"])
@pytest.mark.parametrize("raw", ["0", "-5", "nan", "inf", "40000000"])
def test_the_ttls_are_bounds_checked(name: str, raw: str) -> None:
    with pytest.raises(ConfigurationError, match=name):
        Settings.from_env({name: raw})


def test_the_ttls_default_to_a_day_and_an_hour_and_read_the_environment() -> None:
    assert (Settings().agent_idle_ttl_s, Settings().pending_ttl_s) == (86_400.0, 3_600.0)
    settings = Settings.from_env({"DRIFT_AGENT_IDLE_TTL_S": "20", "DRIFT_PENDING_TTL_S": "2.5"})
    assert (settings.agent_idle_ttl_s, settings.pending_ttl_s) == (20.0, 2.5)


# --- bounds (issue 33): one line per bad value, naming the variable, whatever the source -------------------


@pytest.mark.parametrize(
    ("variable", "raw", "line"),
    [
        ("DRIFT_JUDGE_DEADLINE_S", "nan", "DRIFT_JUDGE_DEADLINE_S: must be a finite number, not 'nan'"),
        ("DRIFT_FETCH_MAX_WAIT_MS", "-10", "DRIFT_FETCH_MAX_WAIT_MS: must be greater than or equal to 0, not '-10'"),
        ("DRIFT_RESTORE_CHECKPOINT_S", "-inf", "DRIFT_RESTORE_CHECKPOINT_S: must be a finite number, not '-inf'"),
        ("DRIFT_WEB_PORT", "-3", "DRIFT_WEB_PORT: must be greater than or equal to 1, not '-3'"),
        ("DRIFT_WEB_PORT", "65536", "DRIFT_WEB_PORT: must be less than or equal to 65535, not '65536'"),
        ("DRIFT_CONNECT_TIMEOUT_S", "0", "DRIFT_CONNECT_TIMEOUT_S: must be greater than 0, not '0'"),
        ("DRIFT_RESTORE_WINDOW_S", "inf", "DRIFT_RESTORE_WINDOW_S: must be a finite number, not 'inf'"),
        ("DRIFT_TOPIC_PREFIX", "a b", "DRIFT_TOPIC_PREFIX: must hold only letters, digits, '.', '_' and '-', "
                                      "not 'a b'"),
        ("DRIFT_EVAL_CRON", "nightly", "DRIFT_EVAL_CRON: must be a crontab expression (minute hour day month weekday), "
                                       "not 'nightly'"),
    ],
)  # fmt: skip
def test_every_bad_value_is_one_line_naming_its_variable(
    variable: str, raw: str, line: str, from_env: EnvFactory
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        from_env({variable: raw})
    assert str(caught.value) == line


def test_several_bad_values_give_one_line_each(from_env: EnvFactory) -> None:
    with pytest.raises(ConfigurationError) as caught:
        from_env({"DRIFT_WEB_PORT": "0", "DRIFT_ACTOR_CONCURRENCY": "0", "DRIFT_BROKER": "ok:1"})
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        "DRIFT_ACTOR_CONCURRENCY",
        "DRIFT_WEB_PORT",
    ]


def test_flags_and_code_are_bounded_like_the_environment(from_env: EnvFactory) -> None:
    with pytest.raises(ConfigurationError, match=r"^DRIFT_WEB_PORT: "):
        from_env({}, web_port=0)
    with pytest.raises(ConfigurationError, match=r"^DRIFT_STEP_DEADLINE_S: "):
        Settings(step_deadline_s=float("inf"))
    with pytest.raises(ConfigurationError, match=r"^DRIFT_JUDGE_CONCURRENCY: "):
        Settings().with_(judge_concurrency=-1)


def test_a_bad_secret_is_named_but_never_shown() -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings(view_token=12345)
    assert str(caught.value).startswith("DRIFT_VIEW_TOKEN: ") and "12345" not in str(caught.value)


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(ValidationError):
        settings.web_port = 1  # type: ignore[misc]
    assert settings.web_port == 6066


def test_the_real_environment_is_read_only_by_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFT_WEB_PORT", "7000")
    assert Settings().web_port == 6066
    assert Settings.from_env().web_port == 7000

"""Production security: broker TLS/SASL from the environment on every path (worker, CLI, SDK), a web port that
binds to loopback by default, and neither message text nor secrets in stats, metrics or logs."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import certifi
import httpx
import pytest
from faust.auth import SASLCredentials, SSLCredentials
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from typer.testing import CliRunner

from engine.errors import ConfigurationError
from engine.judges.factory import make_judge
from engine.settings import Settings
from streams.cli import app as cli
from streams.client import GateClient
from streams.runtime.faust_app import credentials
from streams.wire.kafka import client_kwargs, consumer_kwargs
from streams.worker.app import build_app
from tests.stack import DRIFT, Scenario, Stack, Worker

CA = certifi.where()


def env_settings(**env: str) -> Settings:
    return Settings.from_env({"DRIFT_BROKER": "kafka.internal:9093", **env})


SASL_SSL_ENV = {
    "DRIFT_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
    "DRIFT_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
    "DRIFT_KAFKA_SASL_USERNAME": "gate",
    "DRIFT_KAFKA_SASL_PASSWORD": "s3cret-scram",
    "DRIFT_KAFKA_CA_FILE": CA,
}


# -- the aiokafka arguments of the CLI and the SDK ----------------------------------------------------------


def test_plaintext_by_default_without_tls_or_sasl() -> None:
    kwargs = client_kwargs(env_settings())
    assert kwargs == {"bootstrap_servers": "kafka.internal:9093", "security_protocol": "PLAINTEXT"}


def test_ssl_verifies_the_broker_against_the_given_ca_file() -> None:
    kwargs = client_kwargs(env_settings(DRIFT_KAFKA_SECURITY_PROTOCOL="SSL", DRIFT_KAFKA_CA_FILE=CA))
    context = kwargs["ssl_context"]
    assert kwargs["security_protocol"] == "SSL" and "sasl_mechanism" not in kwargs
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 10  # the bundle was loaded


def test_sasl_plaintext_with_plain_passes_the_credentials() -> None:
    kwargs = client_kwargs(
        env_settings(
            DRIFT_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
            DRIFT_KAFKA_SASL_MECHANISM="PLAIN",
            DRIFT_KAFKA_SASL_USERNAME="gate",
            DRIFT_KAFKA_SASL_PASSWORD="pl41n",
        )
    )
    assert kwargs["security_protocol"] == "SASL_PLAINTEXT" and "ssl_context" not in kwargs
    assert (kwargs["sasl_mechanism"], kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == (
        "PLAIN",
        "gate",
        "pl41n",
    )


def test_sasl_ssl_with_scram_combines_tls_and_credentials() -> None:
    kwargs = consumer_kwargs(env_settings(**SASL_SSL_ENV))
    assert kwargs["security_protocol"] == "SASL_SSL" and kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("gate", "s3cret-scram")
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext) and kwargs["fetch_max_wait_ms"] == 10


def test_sasl_without_a_username_names_the_variables_to_set() -> None:
    with pytest.raises(ConfigurationError, match=r"^DRIFT_KAFKA_SASL_USERNAME: must be set with .*SASL_SSL"):
        env_settings(DRIFT_KAFKA_SECURITY_PROTOCOL="SASL_SSL", DRIFT_KAFKA_SASL_MECHANISM="PLAIN")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DRIFT_KAFKA_SECURITY_PROTOCOL": "TLS"}, "DRIFT_KAFKA_SECURITY_PROTOCOL: must be one of"),
        ({"DRIFT_KAFKA_SASL_MECHANISM": "GSSAPI"}, "DRIFT_KAFKA_SASL_MECHANISM: must be one of"),
    ],
)
def test_unknown_protocols_and_mechanisms_are_configuration_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        env_settings(**env)


def test_a_missing_ca_file_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        client_kwargs(env_settings(DRIFT_KAFKA_SECURITY_PROTOCOL="SSL", DRIFT_KAFKA_CA_FILE="/absent/ca.pem"))


class Captured(Exception):
    """Raised by the recording client classes once they have seen their keyword arguments."""


@dataclass
class Recorder:
    calls: list[dict[str, Any]]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        raise Captured


async def test_the_sdk_builds_its_clients_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder([])
    monkeypatch.setattr("streams.client.sdk.AIOKafkaProducer", recorder)
    for name, value in SASL_SSL_ENV.items():
        monkeypatch.setenv(name, value)
    gate = GateClient("broker.prod:9094", prefix="prod.")
    with pytest.raises(Captured):
        await gate.start()
    kwargs = recorder.calls[0]
    assert kwargs["bootstrap_servers"] == "broker.prod:9094" and gate.topics.drafts == "prod.drafts"
    assert (kwargs["security_protocol"], kwargs["sasl_mechanism"]) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("gate", "s3cret-scram")
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (["topics", "create"], "streams.wire.kafka.AIOKafkaAdminClient"),
        (["tail", "verdicts"], "streams.runtime.fetchwait.KafkaConsumer"),
        (
            ["replay", "--from-topic", "drift.drafts", "--since", "-1h", "--to-prefix", "b."],
            "streams.wire.kafka.AIOKafkaAdminClient",
        ),
    ],
)
def test_cli_commands_build_their_clients_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, args: list[str], target: str
) -> None:
    recorder = Recorder([])
    monkeypatch.setattr(target, recorder)
    result = CliRunner().invoke(cli, args, env={**SASL_SSL_ENV, "DRIFT_BROKER": "broker.prod:9094"})
    assert isinstance(result.exception, Captured), result.output
    kwargs = recorder.calls[0]
    assert kwargs["bootstrap_servers"] == "broker.prod:9094"
    assert (kwargs["security_protocol"], kwargs["sasl_mechanism"], kwargs["sasl_plain_password"]) == (
        "SASL_SSL",
        "SCRAM-SHA-512",
        "s3cret-scram",
    )


# -- the worker (faust) -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"DRIFT_KAFKA_SECURITY_PROTOCOL": "SSL", "DRIFT_KAFKA_CA_FILE": CA},
        {"DRIFT_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "DRIFT_KAFKA_SASL_MECHANISM": "PLAIN",
         "DRIFT_KAFKA_SASL_USERNAME": "gate", "DRIFT_KAFKA_SASL_PASSWORD": "pl41n"},
        SASL_SSL_ENV,
    ],
    ids=["plaintext", "ssl", "sasl-plain", "sasl-ssl-scram"],
)  # fmt: skip
def test_the_worker_reaches_aiokafka_with_the_same_arguments_as_the_cli(env: dict[str, str]) -> None:
    settings = env_settings(**env)
    worker = dict(credentials_to_aiokafka_auth(credentials(settings)))
    cli_side = client_kwargs(settings)
    cli_side.pop("bootstrap_servers")
    assert set(worker) - {"ssl_context"} == set(cli_side) - {"ssl_context"}
    for key in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        assert worker.get(key) == cli_side.get(key), key
    assert isinstance(worker.get("ssl_context"), ssl.SSLContext) == ("ssl_context" in cli_side)


def test_the_faust_app_carries_the_credentials_and_binds_the_web_port_to_loopback() -> None:
    settings = env_settings(**SASL_SSL_ENV)
    app, _ = build_app(settings, make_judge("offline", settings))
    configured = app.conf.broker_credentials
    assert isinstance(configured, SASLCredentials) and configured.username == "gate"
    assert app.conf.web_bind == "127.0.0.1" and app.conf.web_host == "127.0.0.1"
    assert "s3cret-scram" not in repr(configured)
    exposed, _ = build_app(env_settings(DRIFT_WEB_HOST="0.0.0.0"), make_judge("offline", settings))
    assert exposed.conf.web_bind == "0.0.0.0"  # only when configured
    tls, _ = build_app(env_settings(DRIFT_KAFKA_SECURITY_PROTOCOL="SSL"), make_judge("offline", settings))
    assert isinstance(tls.conf.broker_credentials, SSLCredentials)


def test_public_settings_hide_every_secret() -> None:
    settings = env_settings(
        **SASL_SSL_ENV,
        ANTHROPIC_API_KEY="sk-ant-hidden",
        DRIFT_DATABASE_URL="postgresql://drift:pg-hidden@db:5432/drift",
    )
    text = repr(settings.public()) + repr(settings)
    for secret in ("s3cret-scram", "sk-ant-hidden", "pg-hidden"):
        assert secret not in str(settings.public()), secret
    assert "s3cret-scram" not in text and "sk-ant-hidden" not in text
    assert settings.public()["database_url"] == "postgresql://drift:***@db:5432/drift"


# -- end to end: a worker with planted secrets --------------------------------------------------------------

MARKER = f"zq{uuid.uuid4().hex[:10]}x"
SECRETS = {
    "database": f"pgpw-{uuid.uuid4().hex[:12]}",
    "openai": f"sk-openai-{uuid.uuid4().hex[:12]}",
    "sasl": f"sasl-{uuid.uuid4().hex[:12]}",
}
RULES = """
default: 9
rules:
  - proposition: "adherence-[gb]*"
    value: 0
  - proposition: "adherence-[mv]*"
    message_contains: "monotone"
    value: 2
    reasoning: "nothing like the persona"
"""


@dataclass
class Secured:
    scenario: Scenario
    worker: Worker
    env: dict[str, str]
    base: str


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


async def _send_marked_drafts(scenario: Scenario) -> None:
    from streams.client.admin import publish_config
    from streams.store import Store

    agent = scenario.agent("nellie")
    async with await Store.connect(scenario.settings.database()) as store:
        config = await store.set_config(agent, {"gate_adherence_enabled": True, "gate_similarity_enabled": True})
    await publish_config(scenario.settings, agent, config.model_dump())
    await scenario.until_configured(agent, gate_adherence_enabled=True, gate_similarity_enabled=True)
    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        await gate.check(agent_id=agent, text=f"Welcome to {MARKER}, the finest branch.")
        await gate.check(agent_id=agent, text=f"A monotone memo about {MARKER}.")
        await gate.check(agent_id=agent, text=f"Welcome to {MARKER}, the finest branch!")


@pytest.fixture(scope="module")
def secured(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    scenario = Scenario(stack, f"s{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("secured"))
    asyncio.run(scenario.create_topics())
    url = stack.database.url
    assert url.startswith("postgresql://postgres:@")  # the embedded server trusts local sockets: any password works
    env = {
        "DRIFT_DATABASE_URL": url.replace("postgres:@", f"postgres:{SECRETS['database']}@", 1),
        "OPENAI_API_KEY": SECRETS["openai"],
        "DRIFT_KAFKA_SASL_PASSWORD": SECRETS["sasl"],  # unused with PLAINTEXT, but present in the settings
    }
    worker = scenario.worker("--verbose", judge=scenario.rules(RULES), env=env).start()
    asyncio.run(_send_marked_drafts(scenario))
    yield Secured(scenario, worker, worker.env, f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}")
    scenario.close()


@pytest.mark.e2e
def test_the_web_port_answers_on_loopback_only(secured: Secured) -> None:
    assert httpx.get(f"{secured.base}/stats", timeout=5).status_code == 200
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        assert sock.connect_ex((address, int(secured.env["DRIFT_WEB_PORT"]))) != 0


@pytest.mark.e2e
def test_stats_and_metrics_carry_no_message_text(secured: Secured) -> None:
    stats = httpx.get(f"{secured.base}/stats", timeout=5)
    metrics = httpx.get(f"{secured.base}/metrics", timeout=5)
    assert stats.json()["attempts"] == 3 and stats.json()["similarity_failures"] == 1  # the drafts were judged
    for page in (stats.text, metrics.text):
        assert MARKER not in page
        assert "finest branch" not in page and "monotone" not in page and "nothing like the persona" not in page


@pytest.mark.e2e
def test_no_secret_reaches_the_logs_or_drift_stats(secured: Secured) -> None:
    env = {**os.environ, **secured.env}

    def drift(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DRIFT, *args], env=env, capture_output=True, text=True, timeout=30, check=False)

    table, as_json, from_db = (
        drift("stats", "--url", secured.base),
        drift("stats", "--json"),
        drift("stats", "--from-database"),
    )
    assert table.returncode == as_json.returncode == from_db.returncode == 0, table.stderr + from_db.stderr
    assert "attempts judged" in table.stdout and '"attempts": 3' in as_json.stdout  # DRIFT_WEB_PORT picked up
    unreachable = drift("stats", "--database", env["DRIFT_DATABASE_URL"].replace("host=", "host=/nonexistent", 1))
    assert unreachable.returncode == 2 and "cannot connect to the database" in unreachable.stderr

    secured.worker.stop()
    assert secured.worker.process is not None and secured.worker.process.stdout is not None
    logs = secured.worker.ready_line + secured.worker.process.stdout.read().decode(errors="replace")
    logs += secured.worker.log_path.read_text(errors="replace")
    assert "ready worker" in logs and len(logs) > 200  # --verbose produced a real log to search
    outputs = [logs, *(p.stdout + p.stderr for p in (table, as_json, from_db, unreachable))]
    for name, secret in SECRETS.items():
        for output in outputs:
            assert secret not in output, f"the {name} secret leaked"

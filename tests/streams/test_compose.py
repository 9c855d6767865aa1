"""docker-compose.yml and ops/Dockerfile: there is no Docker engine here, so check their structure and their
agreement with the application (settings names, topics, ports, the worker command)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.settings import Settings

REPO = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
SETTINGS_FIELDS = set(Settings.model_fields)


def command(service: dict[str, Any]) -> str:
    cmd = service.get("command", [])
    return cmd if isinstance(cmd, str) else " ".join(cmd)


def workers() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in SERVICES.items() if "drift worker" in command(s)}


def kafka_env() -> dict[str, str]:
    return {k: str(v) for k, v in SERVICES["kafka"]["environment"].items()}


def listeners(value: str) -> dict[str, str]:
    """``NAME://host:port,...`` → {NAME: host:port}."""
    return dict(item.split("://", 1) for item in value.split(","))


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = (REPO / "ops" / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


# -- services and images ------------------------------------------------------------------------------------


def test_services_use_the_official_images() -> None:
    assert SERVICES["kafka"]["image"].startswith("apache/kafka:")
    assert SERVICES["postgres"]["image"] == "postgres:16"
    for name in ("init", *workers()):
        assert SERVICES[name]["build"]["dockerfile"] == "ops/Dockerfile", name
        assert (REPO / SERVICES[name]["build"]["context"] / "ops" / "Dockerfile").is_file()


def test_kafka_runs_kraft_in_combined_mode_with_consistent_listeners() -> None:
    env = kafka_env()
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    declared, advertised = listeners(env["KAFKA_LISTENERS"]), listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert set(declared) <= set(protocols) and controller in declared and controller not in advertised
    assert set(advertised) <= set(declared)
    for name, address in advertised.items():  # each advertised listener is the port that listener binds
        assert address.rsplit(":", 1)[1] == declared[name].rsplit(":", 1)[1], name
    voter_id, voter = env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split("@")
    assert voter_id == env["KAFKA_NODE_ID"] and voter.endswith(":" + declared[controller].rsplit(":", 1)[1])
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_NUM_PARTITIONS"] == "3"


def test_workers_reach_kafka_on_an_advertised_listener() -> None:
    advertised = set(listeners(kafka_env()["KAFKA_ADVERTISED_LISTENERS"]).values())
    for name in ("init", *workers()):
        assert SERVICES[name]["environment"]["DRIFT_BROKER"] in advertised, name
    hostname = SERVICES["kafka"].get("hostname", "kafka")
    assert any(a.startswith(f"{hostname}:") for a in advertised)


def test_healthchecks() -> None:
    kafka = " ".join(SERVICES["kafka"]["healthcheck"]["test"])
    port = listeners(kafka_env()["KAFKA_LISTENERS"])["PLAINTEXT_HOST"].rsplit(":", 1)[1]
    assert f"/opt/kafka/bin/kafka-broker-api-versions.sh --bootstrap-server localhost:{port}" in kafka
    postgres = " ".join(SERVICES["postgres"]["healthcheck"]["test"])
    env = SERVICES["postgres"]["environment"]
    assert f"pg_isready -U {env['POSTGRES_USER']} -d {env['POSTGRES_DB']}" in postgres


def test_init_creates_three_partitions_and_migrates_once_both_services_are_healthy() -> None:
    init = SERVICES["init"]
    script = command(init)
    assert "drift topics create --partitions 3" in script and "drift db migrate" in script
    assert script.index("drift topics create") < script.index("drift db migrate")
    assert init["depends_on"] == {
        "kafka": {"condition": "service_healthy"},
        "postgres": {"condition": "service_healthy"},
    }
    assert init.get("restart") == "no"


def test_two_workers_start_after_init_completed() -> None:
    found = workers()
    replicas = sum(int(s.get("deploy", {}).get("replicas", 1)) for s in found.values())
    assert replicas >= 2
    for name, service in found.items():
        assert service["depends_on"] == {"init": {"condition": "service_completed_successfully"}}, name
        assert "--partitions 3" in command(service)


def test_the_database_url_matches_the_postgres_service_and_holds_no_password() -> None:
    env = SERVICES["postgres"]["environment"]
    for name in ("init", *workers()):
        service_env = SERVICES[name]["environment"]
        match = re.fullmatch(r"postgresql://([^:@]+)@postgres:5432/(\w+)", service_env["DRIFT_DATABASE_URL"])
        assert match, service_env["DRIFT_DATABASE_URL"]
        assert (match.group(1), match.group(2)) == (env["POSTGRES_USER"], env["POSTGRES_DB"])
        # the password goes as PGPASSWORD (no URL-encoding needed), from the same variable as the server's
        assert service_env["PGPASSWORD"].split(":")[0] == env["POSTGRES_PASSWORD"].split(":")[0]


def test_services_restart_on_failure_and_mount_the_cast() -> None:
    for name in ("kafka", "postgres", *workers()):
        assert SERVICES[name]["restart"] == "unless-stopped", name
    for name in ("init", *workers()):
        assert SERVICES[name]["environment"]["DRIFT_PROPOSITIONS_DIR"] == "/cast"
        assert any(str(v).endswith(":/cast:ro") for v in SERVICES[name]["volumes"]), name


def test_every_port_is_published_on_loopback_only() -> None:
    published = [(name, str(p)) for name, s in SERVICES.items() for p in s.get("ports", [])]
    assert published
    for name, port in published:
        assert port.startswith("127.0.0.1:"), (name, port)
    host_ports = [p.split(":")[1] for _, p in published]
    assert len(host_ports) == len(set(host_ports))


def test_worker_web_servers_listen_inside_the_container_on_the_published_port() -> None:
    for name, service in workers().items():
        env = service["environment"]
        assert env["DRIFT_WEB_HOST"] == "0.0.0.0", name
        assert all(str(p).rsplit(":", 1)[1] == str(env["DRIFT_WEB_PORT"]) for p in service["ports"])
        assert str(env["DRIFT_WEB_PORT"]) in " ".join(service["healthcheck"]["test"])


def test_every_drift_variable_is_a_settings_field() -> None:
    for name, service in SERVICES.items():
        for key in service.get("environment", {}):
            if key.startswith("DRIFT_"):
                assert key.removeprefix("DRIFT_").lower() in SETTINGS_FIELDS, (name, key)
            elif name not in {"kafka", "postgres"}:
                assert key in {"ANTHROPIC_API_KEY", "PGPASSWORD"}, (name, key)


# -- the Dockerfile -----------------------------------------------------------------------------------------


def test_the_image_runs_drift_worker_by_default() -> None:
    steps = dockerfile()
    assert steps[0] == ("FROM", "python:3.11-slim")
    entry = [json.loads(args) for instr, args in steps if instr == "ENTRYPOINT"]
    cmd = [json.loads(args) for instr, args in steps if instr == "CMD"]
    assert cmd, "the image needs a CMD"
    assert (entry[-1] if entry else []) + cmd[-1] == ["drift", "worker"]


def test_the_image_installs_the_package_with_its_propositions_and_runs_unprivileged() -> None:
    steps = dockerfile()
    copied = {shlex.split(args)[0]: shlex.split(args)[1] for instr, args in steps if instr == "COPY"}
    assert {"engine", "streams", "ops", "propositions", "pyproject.toml"} <= set(copied)
    assert any(instr == "RUN" and "pip install ." in args for instr, args in steps)
    workdir = next(args for instr, args in steps if instr == "WORKDIR")
    env = " ".join(args for instr, args in steps if instr == "ENV")
    propositions = re.search(r"DRIFT_PROPOSITIONS_DIR=(\S+)", env)
    assert propositions and Path(propositions.group(1)) == Path(workdir) / copied["propositions"]
    users = [args for instr, args in steps if instr == "USER"]
    assert users and users[-1] not in {"root", "0"}
    assert "DRIFT_WEB_HOST" not in env  # loopback unless the deployment says otherwise (compose does)


@pytest.mark.parametrize("name", ["engine", "streams", "ops", "propositions", "pyproject.toml"])
def test_what_the_image_copies_exists(name: str) -> None:
    assert (REPO / name).exists()

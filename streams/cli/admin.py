"""``drift topics``, ``drift db`` and ``drift config``: administration of a running stack."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from engine.errors import ConfigurationError
from engine.ids import shown
from engine.redaction import mask_url
from streams.cli.common import BrokerOpt, DatabaseOpt, PrefixOpt, quiet_kafka_logs, run, settings_from

topics_app = typer.Typer(help="Kafka topics of the protocol.", no_args_is_help=True)
db_app = typer.Typer(help="The PostgreSQL schema.", no_args_is_help=True)
config_app = typer.Typer(help="Per-agent configuration (agent_evaluation_config).", no_args_is_help=True)

#: The keys of ``drift config set`` for its --help, kept here so help needs no pydantic import
#: (tests/streams/cli/test_first_run_cli.py checks it against engine.models.AgentConfig).
CONFIG_KEYS_HELP = (
    "gate_enabled (bool), gate_adherence_enabled, gate_consistency_enabled, gate_fluency_enabled, "
    "gate_suitability_enabled, gate_similarity_enabled (bool); gate_adherence_threshold, "
    "gate_consistency_threshold, gate_fluency_threshold, gate_suitability_threshold (0-9); "
    "max_action_similarity (0-1); max_correction_attempts (0-20); continue_on_failure (bool); "
    "minimum_required_qty_of_actions (0-1000); anti_convergence_enabled (bool); convergence_threshold (0-9); "
    "variety_intervention_enabled (bool); variety_message_threshold (0-1000); "
    "repetition_suppression_enabled (bool); repetition_threshold (0-1); monitor_enabled (bool); "
    "monitor_alpha (0-0.5); monitor_min_shift (0-8); monitor_reference (baseline | first-n); "
    "propositions (a tree's path), judge (a judge spec)"
)
#: exit code of ``drift config set`` when the change was stored but not announced to the workers
EXIT_NOT_ANNOUNCED = 3


@topics_app.command("create")
def topics_create(
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions per topic.")] = 3,
) -> None:
    """Create every topic (and the tables' changelogs) up front; existing topics are left alone."""
    from streams.wire.kafka import create_topics
    from streams.wire.topics import all_topics

    settings = settings_from(broker=broker, prefix=prefix)
    with quiet_kafka_logs():
        created = run(create_topics(settings, partitions=partitions, timeout_s=settings.connect_timeout_s))
    total = len(all_topics(settings))
    typer.echo(f"topics: {len(created)} created, {total - len(created)} already present ({mask_url(settings.broker)})")


@db_app.command("migrate")
def db_migrate(database: DatabaseOpt = None) -> None:
    """Apply pending SQL migrations (idempotent)."""
    from streams.store import Store

    settings = settings_from(database=database)

    async def go() -> list[str]:
        async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
            return await store.migrate()

    applied = run(go())
    typer.echo(f"migrations: {len(applied)} applied" + (f" ({', '.join(applied)})" if applied else ", up to date"))


def _parse_assignments(pairs: list[str]) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"expected key=value, got {shown(pair)}")
        lowered = raw.strip().lower()
        value: Any = raw
        if lowered in {"true", "false"}:
            value = lowered == "true"
        changes[key.strip()] = value
    return changes


@config_app.command("show")
def config_show(
    agent: Annotated[str, typer.Argument(help="Agent id.")],
    database: DatabaseOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show an agent's configuration (defaults when the agent has none yet)."""
    from engine.ids import check_agent_id
    from engine.models import AgentConfig
    from streams.cli.agents import has_persona, note_unknown_agent
    from streams.store import Store

    check_agent_id(agent)
    settings = settings_from(database=database)

    async def go() -> tuple[AgentConfig | None, bool]:
        from streams.cli.agents import known_in_database

        async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
            return await store.get_config(agent), await known_in_database(store, agent)

    config, seen = run(go())
    data = (config or AgentConfig()).model_dump()
    if config is None and not seen and not has_persona(agent, settings.propositions_dir):
        note_unknown_agent(agent)
    if as_json:
        typer.echo(json.dumps({"agent_id": agent, "registered": config is not None, "config": data}, indent=2))
        return
    typer.echo(f"{agent}{'' if config else ' (not registered yet: defaults)'}")
    for key, value in data.items():
        typer.echo(f"  {key:<34} {value}")


@config_app.command("set", epilog=f"Keys: {CONFIG_KEYS_HELP}. See docs/reference.md.")
def config_set(
    agent: Annotated[str, typer.Argument(help="Agent id.")],
    assignments: Annotated[list[str], typer.Argument(help="key=value pairs, e.g. gate_adherence_enabled=true")],
    database: DatabaseOpt = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Change an agent's configuration; running workers pick it up within 2 s.

    The agent id, the keys and every value (each has bounds) are checked before anything is written.
    Exit 3 when the change was stored but could not be announced on Kafka (the broker is unreachable)."""
    from engine.config_changes import validated_change
    from engine.models import AgentConfig
    from streams.client.admin import publish_config
    from streams.store import Store

    settings = settings_from(database=database, broker=broker, prefix=prefix)
    changes = _parse_assignments(assignments)
    validated_change(agent, AgentConfig(), changes)  # fail fast, before connecting; the store checks again

    async def go() -> tuple[dict[str, Any], bool]:
        async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
            new = await store.set_config(agent, changes)
        announced = await publish_config(settings, agent, new.model_dump(), timeout_s=settings.connect_timeout_s)
        return new.model_dump(), announced

    with quiet_kafka_logs():
        new, announced = run(go())
    for key in changes:
        typer.echo(f"{agent}: {key} = {new[key]}")
    if not announced:
        typer.echo(
            f"drift: stored in the database but not announced: no Kafka broker at {mask_url(settings.broker)}; "
            f"workers on this database still pick it up within 2 s; to announce it, start the broker and run "
            f"'drift config set {agent} {' '.join(assignments)}' again",
            err=True,
        )
        raise typer.Exit(EXIT_NOT_ANNOUNCED)

"""``drift agents list``: every agent id drift knows, from the persona files and from the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streams.cli.common import DatabaseOpt, PropositionsOpt, run, settings_from

if TYPE_CHECKING:
    from streams.store import Store
    from streams.store.agents import StoredAgent

app = typer.Typer(help="Agents: which ids have a persona, a stored configuration, recorded messages.")


@app.command("list")
def agents_list(
    propositions: PropositionsOpt = None,
    database: DatabaseOpt = None,
    no_database: Annotated[bool, typer.Option("--no-database", help="Persona files only.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List agent ids: persona file, stored configuration, committed actions, last message."""
    from engine.personas import persona_files

    settings = settings_from(propositions=propositions, database=database)
    personas = {p.stem for p in persona_files(Path(settings.propositions_dir))}
    stored = [] if no_database else run(_stored(settings.database(), settings.connect_timeout_s))
    rows = _rows(personas, stored)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no agents yet: add persona files (drift init DIR) or send drafts to the gate")
        return
    typer.echo(f"{'agent':<24} {'persona':<8} {'configured':<10} {'actions':>8}  last message")
    for row in rows:
        typer.echo(
            f"{row['agent_id']:<24} {'yes' if row['persona'] else '-':<8} {'yes' if row['configured'] else '-':<10}"
            f" {row['actions']:>8}  {row['last_seen'] or '-'}"
        )


async def _stored(url: str, timeout_s: float) -> list[StoredAgent]:
    from streams.store import Store
    from streams.store.agents import stored_agents

    async with await Store.connect(url, timeout_s=timeout_s) as store:
        return await stored_agents(store)


def _rows(personas: set[str], stored: list[StoredAgent]) -> list[dict[str, Any]]:
    by_id = {a.id: a for a in stored}
    rows = []
    for agent_id in sorted(personas | set(by_id)):
        agent = by_id.get(agent_id)
        rows.append(
            {
                "agent_id": agent_id,
                "persona": agent_id in personas,
                "configured": bool(agent and agent.configured),
                "actions": agent.actions if agent else 0,
                "last_seen": agent.last_seen if agent else None,
            }
        )
    return rows


def has_persona(agent_id: str, propositions_dir: Path) -> bool:
    from engine.personas import persona_files

    return any(p.stem == agent_id for p in persona_files(Path(propositions_dir)))


def note_unknown_agent(agent_id: str, what: str = "defaults shown") -> None:
    """The one-line note of a command asked about an agent id drift has never seen (issue 18, point 5)."""
    typer.echo(f"drift: note: unknown agent {agent_id!r}, {what} (see 'drift agents list')", err=True)


async def known_in_database(store: Store, agent_id: str) -> bool:
    """True when the ``agents`` table holds ``agent_id`` (the gate registers every agent it sees)."""
    return bool(await store.pool.fetchval("SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1)", agent_id))

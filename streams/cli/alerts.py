"""``drift alerts list`` / ``drift alerts ack``: the drift monitor's alerts, from the database."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

import typer

from streams.cli.common import DatabaseOpt, run, settings_from

app = typer.Typer(help="Drift-monitor alerts: which agents' scores moved, and whether the agent or the judge did.")


@app.command("list")
def alerts_list(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's alerts.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Alerts since (RFC 3339 or relative: -2h, -7d).")] = None,
    open_only: Annotated[bool, typer.Option("--open", help="Only alerts not yet acknowledged.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=10_000, help="At most this many (newest first).")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    database: DatabaseOpt = None,
) -> None:
    """List alerts, newest first: agent, dimension, stream, direction, reference, cause, acknowledged."""
    from streams.client.replay import parse_time

    settings = settings_from(database=database)
    start = parse_time(since) if since else None
    rows = run(_alerts(settings.database(), settings.connect_timeout_s, agent, start, open_only, limit))
    if as_json:
        typer.echo(json.dumps([_jsonable(r) for r in rows], indent=2))
        return
    if not rows:
        typer.echo("no alerts" + (" open" if open_only else "") + " (the monitor runs in every `drift worker`)")
        return
    typer.echo(f"{'id':<36}  {'created (UTC)':<19}  {'agent':<16} {'dimension':<12} {'stream':<10} "
               f"{'change':<22} {'cause':<8} ack")  # fmt: skip
    for r in rows:
        change = f"{r['direction']} from {r['reference']:.2f}" + (
            f" to ~{r['recent_mean']:.2f}" if r["recent_mean"] is not None else ""
        )
        acked = r["acknowledged_at"].strftime("%Y-%m-%d %H:%M") if r["acknowledged_at"] else "open"
        typer.echo(f"{r['id']:<36}  {r['created_at']:%Y-%m-%d %H:%M:%S}  {r['agent_id']:<16} {r['dimension']:<12} "
                   f"{r['source']:<10} {change:<22} {r['cause']:<8} {acked}")  # fmt: skip


@app.command("ack")
def alerts_ack(
    alert_id: Annotated[str, typer.Argument(help="The alert's id (from `drift alerts list`).")],
    database: DatabaseOpt = None,
) -> None:
    """Acknowledge an alert: its stream takes a new reference from its next observations."""
    from engine.errors import ConfigurationError

    settings = settings_from(database=database)
    row = run(_ack(settings.database(), settings.connect_timeout_s, alert_id))
    if row is None:
        raise ConfigurationError(f"no alert {alert_id!r}: `drift alerts list` shows the ids")
    typer.echo(
        f"acknowledged {row['id']} ({row['agent_id']} {row['dimension']}, {row['source']}): the stream re-references "
        "on its next observations"
    )


async def _alerts(
    url: str, timeout_s: float, agent: str | None, since: datetime | None, open_only: bool, limit: int
) -> list[Any]:
    from streams.store import Store

    async with await Store.connect(url, timeout_s=timeout_s) as store:
        return await store.alerts(agent_id=agent, since=since, open_only=open_only, limit=limit)


async def _ack(url: str, timeout_s: float, alert_id: str) -> dict[str, Any] | None:
    from streams.store import Store

    async with await Store.connect(url, timeout_s=timeout_s) as store:
        return await store.acknowledge_alert(alert_id)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}

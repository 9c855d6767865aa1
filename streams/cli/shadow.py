"""``drift shadow start|list|stop|promote``: candidates judged beside the live gate (docs/shadow.md).

Everything a shadow names is checked before anything is stored: the name, the agent pattern, the ``--set`` keys
and their bounds (as ``drift config set``), the propositions tree (as ``drift propositions validate``) and the
judge spec (built once by the judge factory). A shadow is stored in PostgreSQL, then announced on the compacted
``shadows`` topic; running workers pick it up at once from the topic, or within a second from the table.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from engine.errors import ConfigurationError
from streams.cli.common import BrokerOpt, DatabaseOpt, PrefixOpt, run, settings_from

app = typer.Typer(help="Shadow gating: judge a candidate beside the live gate, compare, promote.", no_args_is_help=True)

#: exit code when the change was stored but could not be announced on Kafka (as ``drift config set``)
EXIT_NOT_ANNOUNCED = 3
NameArg = Annotated[str, typer.Argument(help="The shadow's name.")]
ByOpt = Annotated[str | None, typer.Option("--by", help="Who does it (default: the login name).")]


def _who(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@app.command("start")
def shadow_start(
    name: NameArg,
    agents: Annotated[str, typer.Option("--agents", help="Glob over agent ids, e.g. 'michael*'.")],
    propositions: Annotated[Path | None, typer.Option("--propositions", help="Candidate propositions tree.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Candidate judge spec (as DRIFT_JUDGE).")] = None,
    assignments: Annotated[
        list[str] | None, typer.Option("--set", help="Candidate configuration key=value (repeatable).")
    ] = None,
    sample: Annotated[float, typer.Option("--sample", help="Share of the drafts judged, (0, 1].")] = 0.2,
    budget_usd: Annotated[float | None, typer.Option("--budget-usd", help="Stop after this many dollars.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Stop after this many tokens.")] = None,
    by: ByOpt = None,
    database: DatabaseOpt = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Start a shadow: the agents' sampled drafts are judged by the candidate after their live verdict.

    Exit 2 (one `drift:` line) when anything is invalid, before anything is stored; exit 3 when it was stored
    but could not be announced on Kafka (workers still pick it up from the database)."""
    from engine.shadow import Shadow

    settings = settings_from(database=database, broker=broker, prefix=prefix)
    keys = _checked_settings(name, agents, assignments or [])
    _check_limits(sample, budget_usd, max_tokens)
    tree, spec = _checked_tree(propositions), _checked_judge(judge, settings, budget_usd)
    shadow = Shadow(name=name, agents=agents, propositions=tree, judge=spec, settings=keys, sample=sample,
                    budget_usd=budget_usd, max_tokens=max_tokens)  # fmt: skip
    row, announced = run(_start(settings, shadow, _who(by)))
    typer.echo(f"shadow {row['name']}: running on {row['agents']} (sample {row['sample']:g})")
    _announced_or_exit(announced, settings)


def _checked_settings(name: str, agents: str, assignments: list[str]) -> dict[str, Any]:
    from engine.shadow import check_name, check_pattern, check_settings
    from streams.cli.admin import _parse_assignments

    check_name(name)
    check_pattern(agents)
    return check_settings(name, _parse_assignments(assignments))


def _check_limits(sample: float, budget_usd: float | None, max_tokens: int | None) -> None:
    from engine.shadow import check_limits

    check_limits(sample, budget_usd, max_tokens)


def _checked_tree(tree: Path | None) -> str | None:
    """The tree's absolute path once ``drift propositions validate`` would accept it."""
    if tree is None:
        return None
    from streams.cli.propositions import tree_problems

    root = tree.expanduser().resolve()
    if not root.is_dir():
        raise ConfigurationError(f"--propositions: no such directory: {tree}")
    report, issues, _ = tree_problems(root)
    if not issues and report.files == 0:
        raise ConfigurationError(f"--propositions: {tree} holds no propositions files")
    if issues:
        more = f" (and {len(issues) - 1} more: drift propositions validate {tree})" if len(issues) > 1 else ""
        raise ConfigurationError(f"--propositions: {issues[0]}{more}")
    return str(root)


def _checked_judge(spec: str | None, settings: Any, budget_usd: float | None) -> str | None:
    """The spec, with a scripted or replay file made absolute, once the judge factory built it; a dollar budget
    needs a judge whose price is known."""
    if spec is None:
        return None
    from engine.errors import PropositionFileError
    from engine.judges.factory import make_judge
    from engine.pricing import PriceTable

    kind, _, argument = spec.strip().partition(":")
    if kind in {"scripted", "replay"} and argument:
        spec = f"{kind}:{Path(argument).expanduser().resolve()}"
    if not spec.strip():
        raise ConfigurationError("--judge: an empty spec (give e.g. anthropic:MODEL or scripted:FILE)")
    try:
        judge = make_judge(spec, settings)
    except PropositionFileError as exc:
        raise ConfigurationError(f"--judge: {exc.issues[0] if exc.issues else exc}") from None
    except ConfigurationError as exc:
        raise ConfigurationError(f"--judge: {exc}") from None
    prices = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
    if budget_usd is not None and prices.price(judge.name) is None:
        raise ConfigurationError(f"--budget-usd: no price known for {judge.name} (DRIFT_PRICES_FILE; or --max-tokens)")
    return spec


async def _start(settings: Any, shadow: Any, by: str) -> tuple[dict[str, Any], bool]:
    from streams.store import Store

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        await store.create_shadow(shadow, by)
        row = await store.shadow(shadow.name)
    assert row is not None
    return row, await _announce(settings, [row])


async def _announce(settings: Any, rows: list[dict[str, Any]], configs: dict[str, Any] | None = None) -> bool:
    from streams.client.admin import publish
    from streams.services.shadow import change_record
    from streams.wire.payloads import AgentConfigChange, encode
    from streams.wire.topics import Topics

    topics = Topics(settings.topic_prefix)
    records = [(topics.shadows, r["name"].encode(), change_record(r)) for r in rows]
    for agent, config in (configs or {}).items():
        change = encode(AgentConfigChange(agent_id=agent, config=config))
        records.append((topics.agent_config, agent.encode(), change))
    return await publish(settings, records, timeout_s=settings.connect_timeout_s)


def _announced_or_exit(announced: bool, settings: Any) -> None:
    if not announced:
        from engine.redaction import mask_url

        typer.echo(f"drift: stored in the database but not announced: no Kafka broker at {mask_url(settings.broker)}; "
                   "workers on this database pick it up within 2 s", err=True)  # fmt: skip
        raise typer.Exit(EXIT_NOT_ANNOUNCED)


@app.command("list")
def shadow_list(
    database: DatabaseOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Every shadow, newest first: status, agents, sample, attempts compared, skipped, spent."""
    settings = settings_from(database=database)
    rows = run(_list(settings))
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    if not rows:
        typer.echo("no shadows (start one with `drift shadow start`)")
        return
    typer.echo(f"{'name':<20} {'status':<13} {'agents':<16} {'sample':>6} {'compared':>8} {'skipped':>7} "
               f"{'tokens':>9} {'usd':>8}")  # fmt: skip
    for r in rows:
        typer.echo(f"{r['name']:<20} {r['status']:<13} {r['agents']:<16} {r['sample']:>6g} {r['compared']:>8} "
                   f"{r['skipped']:>7} {r['spent_tokens']:>9} {r['spent_usd']:>8.4f}")  # fmt: skip


async def _list(settings: Any) -> list[dict[str, Any]]:
    from streams.store import Store

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        return await store.shadows()


@app.command("stop")
def shadow_stop(
    name: NameArg, database: DatabaseOpt = None, broker: BrokerOpt = None, prefix: PrefixOpt = None
) -> None:
    """Stop a shadow (its verdicts stay for the report). Unknown or already ended: one `drift:` line, exit 2."""
    settings = settings_from(database=database, broker=broker, prefix=prefix)
    _, announced = run(_stop(settings, name))
    typer.echo(f"shadow {name}: stopped")
    _announced_or_exit(announced, settings)


async def _stop(settings: Any, name: str) -> tuple[dict[str, Any], bool]:
    from streams.store import Store

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        row = await store.stop_shadow(name)
    return row, await _announce(settings, [row])


@app.command("promote")
def shadow_promote(
    name: NameArg, by: ByOpt = None, database: DatabaseOpt = None, broker: BrokerOpt = None, prefix: PrefixOpt = None
) -> None:
    """Make the candidate live for the shadow's agents (no restart) and stop the shadow.

    Its keys, tree and judge go into each covered agent's configuration through the path of `drift config set`;
    workers pick them up within 2 s. A stopped, promoted or unknown shadow: one `drift:` line, exit 2."""
    settings = settings_from(database=database, broker=broker, prefix=prefix)
    who = _who(by)
    _, agents, announced = run(_promote(settings, name, who))
    typer.echo(f"shadow {name}: promoted by {who} to {len(agents)} agent(s)" + (f": {', '.join(agents)}" if agents
                                                                                else ""))  # fmt: skip
    _announced_or_exit(announced, settings)


async def _promote(settings: Any, name: str, by: str) -> tuple[dict[str, Any], list[str], bool]:
    from streams.store import Store
    from streams.store.shadows import shadow_of

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        row = await store.shadow(name)
        if row is None or row["status"] not in {"running", "budget_spent"}:
            await store.promote_shadow(name, by)  # raises the one-line error
        changes = _candidate_keys(shadow_of(row or {}))
        configs: dict[str, Any] = {}
        row, agents = await store.promote_shadow(name, by)
        for agent in agents:
            configs[agent] = (await store.set_config(agent, changes)).model_dump()
    return row, agents, await _announce(settings, [row], configs)


def _candidate_keys(shadow: Any) -> dict[str, Any]:
    changes = dict(shadow.settings)
    if shadow.propositions is not None:
        changes["propositions"] = shadow.propositions
    if shadow.judge is not None:
        changes["judge"] = shadow.judge
    return changes

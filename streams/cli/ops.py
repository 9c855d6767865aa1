"""``drift tail``, ``drift replay`` and ``drift stats``: watch, re-run and summarise a running gate."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer

from engine.errors import ConfigurationError, ServiceError
from engine.redaction import mask_url
from streams.cli.common import BrokerOpt, DatabaseOpt, PrefixOpt, run, settings_from

if TYPE_CHECKING:
    from rich.console import Console

    from engine.settings import Settings
    from streams.client.tail import TailRecord

app = typer.Typer()

FROM_DATABASE_HELP = (
    "Read the first attempts recorded in --database instead of a topic (what the embedded broker no longer holds "
    "after a restart)."
)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table or coloured lines.")]
FromTopicOpt = Annotated[str | None, typer.Option("--from-topic", help="Topic of recorded drafts, e.g. drift.drafts.")]
ReplayConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="YAML: agent_id (or '*'): {key: value} applied before replaying.")
]


@app.command()
def tail(
    kind: Annotated[str, typer.Argument(help="verdicts | corrections | messages | directives | dlq | alerts")],
    agent: Annotated[str | None, typer.Option("--agent", help="Only records about this agent id.")] = None,
    from_beginning: Annotated[bool, typer.Option("--from-beginning", help="Start at the oldest record.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One raw JSON object per line (for piping).")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Stop after N records.")] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Follow a gate output topic live: one line per record (agent, decision/outcome, scores). Ctrl-C stops."""
    from rich.console import Console

    from streams.client.tail import tail, topic_for

    settings = settings_from(broker=broker, prefix=prefix)
    topic = topic_for(settings, kind)
    errors = Console(stderr=True, highlight=False)
    show = _printer(Console(highlight=False, soft_wrap=True), errors, agent=agent, as_json=as_json)

    def ready() -> None:  # on stderr, so piped JSON stays clean
        start = "the beginning" if from_beginning else "now"
        errors.print(f"[dim]tailing {topic} on {mask_url(settings.broker)} from {start} (Ctrl-C to stop)[/dim]")

    try:
        run(tail(settings, kind, show, agent=agent, from_beginning=from_beginning, limit=limit, on_ready=ready))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


def _printer(console: Console, errors: Console, *, agent: str | None, as_json: bool) -> Callable[[TailRecord], bool]:
    """What prints one tailed record (a coloured line, or its raw JSON); it returns False once the reader left."""
    from streams.client.tail import render

    def show(record: TailRecord) -> bool:
        try:
            if not as_json:
                console.print(render(record, agent))
            elif (line := record.json_line()) is not None:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            else:
                errors.print(f"skipped p{record.partition}@{record.offset}: {record.error}", markup=False)
        except BrokenPipeError:  # e.g. piped into `head`
            return False
        return True

    return show


@app.command()
def replay(
    since: Annotated[str, typer.Option("--since", help="Start of the window: RFC 3339 or relative (-15m, -2h).")],
    to_prefix: Annotated[str, typer.Option("--to-prefix", help="Topic prefix of the gate that judges the replay.")],
    from_topic: FromTopicOpt = None,
    from_database: Annotated[bool, typer.Option("--from-database", help=FROM_DATABASE_HELP)] = False,
    until: Annotated[str | None, typer.Option("--until", help="End of the window (exclusive; default now).")] = None,
    config: ReplayConfigOpt = None,
    broker: BrokerOpt = None,
    database: DatabaseOpt = None,
    partitions: Annotated[int, typer.Option("--partitions", min=1, help="Partitions when creating topics.")] = 3,
    as_json: JsonOpt = False,
) -> None:
    """Re-publish recorded drafts of a time window into another prefix (keys kept) for treatment/control runs.

    The drafts come from --from-topic, or with --from-database from the correction logs in --database (first
    attempts, same draft ids). The configuration (--config) goes to --database: give the replay gate its own
    database, since agent configuration and correction logs are keyed by agent and draft id."""
    from streams.client.replay import load_agent_configs, parse_time

    if from_database == (from_topic is not None):
        raise ConfigurationError("give either --from-topic or --from-database")
    settings = settings_from(broker=broker, database=database)
    configs = load_agent_configs(config) if config is not None else None
    start, end = parse_time(since), parse_time(until) if until else None
    window = ReplayWindow(to_prefix=to_prefix, since=start, until=end, configs=configs, partitions=partitions)
    _report_replay(_replay(settings, from_topic, window), from_topic or "the database", to_prefix, as_json)


class ReplayWindow(TypedDict):
    """What ``drift replay`` re-publishes where, whichever source the drafts come from."""

    to_prefix: str
    since: datetime
    until: datetime | None
    configs: dict[str, dict[str, Any]] | None
    partitions: int


def _replay(settings: Settings, from_topic: str | None, window: ReplayWindow) -> Any:
    """Replay ``window`` from ``from_topic`` (None: the database) with a progress bar on stderr; its counts."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from streams.client.replay import replay
    from streams.client.replay_database import replay_from_database

    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("replay", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        if from_topic is not None:
            return run(replay(settings, from_topic=from_topic, progress=progress, **window))
        return run(replay_from_database(settings, progress=progress, **window))


def _report_replay(counts: Any, from_topic: str, to_prefix: str, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"from_topic": from_topic, "to_prefix": to_prefix, **counts.as_dict()}))
        return
    if counts.configured_agents:
        typer.echo(f"configured {len(counts.configured_agents)} agent(s): {', '.join(counts.configured_agents)}")
    typer.echo(
        f"read {counts.read}, replayed {counts.replayed} into {to_prefix}drafts, "
        f"skipped {counts.skipped_out_of_window} out of the window and {counts.skipped_retries} retry attempt(s), "
        f"{counts.invalid} invalid"
    )


@app.command()
def stats(
    url: Annotated[
        str | None, typer.Option("--url", help="Worker web address (default http://127.0.0.1:<DRIFT_WEB_PORT>).")
    ] = None,
    from_database: Annotated[
        bool, typer.Option("--from-database", help="Compute the statistics from correction_logs instead.")
    ] = False,
    database: DatabaseOpt = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent (reads the database).")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Logs since (RFC 3339 or -2h; reads the database).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Price the tokens as this model (default: the worker's judge).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Gate statistics of a running worker (its /stats page), or from the database with --from-database.

    Costs are dollars at the price table's rates (DRIFT_PRICES_FILE overrides it; docs/reference.md)."""
    from rich.console import Console

    settings = settings_from(database=database)
    if from_database or database is not None or agent is not None or since is not None:
        snapshot, source = _database_stats(settings, agent, since)
    else:
        address = (url or f"http://127.0.0.1:{settings.web_port}").rstrip("/")
        snapshot, source = _fetch_stats(address), address
    snapshot["cost_usd"], snapshot["priced_as"] = _cost(settings, snapshot, model)
    if as_json:
        typer.echo(json.dumps(snapshot, indent=2, sort_keys=True))
        return
    print_stats(Console(highlight=False), snapshot, source)


def _database_stats(settings: Settings, agent: str | None, since: str | None) -> tuple[dict[str, Any], str]:
    """The statistics computed from the correction logs (``agent``'s only when given), and where from."""
    from streams.client.replay import parse_time

    window = parse_time(since) if since else None
    snapshot = run(_database_snapshot(settings.database(), agent, window, settings.connect_timeout_s))
    if not snapshot.pop("known", True):
        from streams.cli.agents import note_unknown_agent

        note_unknown_agent(str(agent), "nothing recorded")
    return snapshot, "database (correction_logs)"


def _fetch_stats(address: str) -> dict[str, Any]:
    import httpx

    try:
        response = httpx.get(f"{address}/stats", timeout=5.0)
        response.raise_for_status()
        data = response.json()
    except httpx.HTTPError as exc:
        raise ServiceError(f"cannot read {mask_url(address)}/stats: {type(exc).__name__}: {exc}") from None
    except ValueError:
        raise ServiceError(f"{mask_url(address)}/stats did not answer with JSON (is it a drift worker?)") from None
    if not isinstance(data, dict) or "attempts" not in data:
        raise ServiceError(f"{mask_url(address)}/stats did not answer with gate statistics")
    return data


def _cost(settings: Any, snapshot: dict[str, Any], model: str | None) -> tuple[float | None, str | None]:
    """Dollars for the snapshot's tokens, priced as ``model`` or the judge the worker names (None: unknown)."""
    from engine.models import TokenUsage
    from engine.pricing import PriceTable

    priced_as = model or snapshot.get("judge")
    if not priced_as:
        return None, None
    table = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
    usage = TokenUsage(**{k: int(v) for k, v in (snapshot.get("token_usage") or {}).items() if k in _TOKEN_KINDS})
    return table.cost(priced_as, usage), priced_as


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _cost_text(s: dict[str, Any]) -> str:
    from engine.pricing import format_cost

    if not s.get("priced_as"):
        return "unknown (pass --model MODEL to price the tokens)"
    return f"{format_cost(s.get('cost_usd'))} (priced as {s['priced_as']})"


def _state_rows(state: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """What a running worker holds (absent from the database snapshot)."""
    if state is None:
        return []
    lag = state.get("sink_lag_records") or {}
    return [
        ("agents in memory", _fmt(state.get("agents_in_memory"))),
        ("pending attempts in memory", _fmt(state.get("pending_attempts"))),
        ("table restore at last assignment (s)", _fmt(state.get("table_restore_seconds"), 2)),
        ("sinks' lag (records)", ", ".join(f"{k} {v}" for k, v in sorted(lag.items())) or "—"),
    ]


def print_stats(console: Console, s: dict[str, Any], source: str) -> None:
    """The snapshot as three rich tables: totals, per dimension, outcomes."""
    from rich.table import Table

    from engine.display import outcome_label, score_text

    totals = Table(title=f"gate statistics — {source}", show_header=False, title_justify="left")
    latency = s.get("latency_ms") or {}
    usage = s.get("token_usage") or {}
    rows = [
        ("attempts judged", s.get("attempts")),
        ("drafts (first attempts)", s.get("drafts")),
        ("original success rate", _fmt(s.get("original_success_rate"), 3)),
        ("regeneration failure rate (failed / regenerations)", f"{_fmt(s.get('regeneration_failure_rate'), 3)} "
         f"({s.get('failed_regenerations', 0)} / {s.get('regenerations', 0)})"),
        ("similarity checks / failures", f"{s.get('similarity_checks', 0)} / {s.get('similarity_failures', 0)}"),
        ("verdict latency p50 / p90 / p99 (ms)", " / ".join(_fmt(latency.get(q), 1) for q in ("p50", "p90", "p99"))),
        ("judge calls", _fmt(s.get("judge_calls"))),
        ("judge tokens in / out", f"{usage.get('input_tokens', 0)} / {usage.get('output_tokens', 0)}"),
        ("cache read / write tokens", f"{usage.get('cache_read_input_tokens', 0)} / "
                                      f"{usage.get('cache_creation_input_tokens', 0)}"),
        ("judge cost", _cost_text(s)),
        ("dead letters", _fmt(s.get("dead_letters"))),
        *_state_rows(s.get("state")),
    ]  # fmt: skip
    for name, value in rows:
        totals.add_row(name, str(value))
    dims = Table("dimension", "mean score", "failures", "timeouts", "failed regen. mean ± sd", title="per dimension",
                 title_justify="left")  # fmt: skip
    names = sorted({*s.get("mean_scores", {}), *s.get("dimension_failures", {}), *s.get("dimension_timeouts", {})})
    for name in names:
        mean, failed = s.get("mean_scores", {}).get(name), s.get("failed_scores", {}).get(name)
        spread = f"{score_text(failed['mean'])} ± {score_text(failed['sd'])} (n={failed['n']})" if failed else "—"
        dims.add_row(name, score_text(mean), str(s.get("dimension_failures", {}).get(name, 0)),
                     str(s.get("dimension_timeouts", {}).get(name, 0)), spread)  # fmt: skip
    outcomes = Table("outcome", "attempts", title="outcomes (per attempt)", title_justify="left")
    for outcome, count in sorted(s.get("outcomes", {}).items(), key=lambda kv: -kv[1]):
        outcomes.add_row(outcome_label(outcome), str(count))
    console.print(totals, dims if names else "[dim]no dimension was judged[/dim]", outcomes)


# -- database mode -----------------------------------------------------------------------------------------

_TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_DIMENSIONS_SQL = """
SELECT d.key AS dimension,
       avg((d.value->>'score')::float8) FILTER (WHERE NOT t.timed_out) AS mean,
       count(*) FILTER (WHERE NOT t.timed_out AND (d.value->>'score')::float8 < CASE d.key
           WHEN 'adherence' THEN a.gate_adherence_threshold WHEN 'consistency' THEN a.gate_consistency_threshold
           WHEN 'fluency' THEN a.gate_fluency_threshold ELSE a.gate_suitability_threshold END) AS failures,
       count(*) FILTER (WHERE t.timed_out) AS timeouts,
       count(*) FILTER (WHERE NOT t.timed_out AND f.failed) AS failed_n,
       avg((d.value->>'score')::float8) FILTER (WHERE NOT t.timed_out AND f.failed) AS failed_mean,
       stddev_pop((d.value->>'score')::float8) FILTER (WHERE NOT t.timed_out AND f.failed) AS failed_sd
FROM correction_logs c
JOIN agent_evaluation_config a ON a.agent_id = c.agent_id,
LATERAL jsonb_each(c.dimension_scores) d,
LATERAL (SELECT coalesce((d.value->>'timed_out')::bool, false) AS timed_out) t,
LATERAL (SELECT c.attempt_number > 1 AND c.outcome IN ('corrected', 'forced_through', 'rejected') AS failed) f
WHERE ($1::text IS NULL OR c.agent_id = $1) AND ($2::timestamptz IS NULL OR c.created_at >= $2)
GROUP BY d.key
"""
_OUTCOMES_SQL = """
SELECT outcome, count(*) AS n FROM correction_logs c
WHERE ($1::text IS NULL OR c.agent_id = $1) AND ($2::timestamptz IS NULL OR c.created_at >= $2)
GROUP BY outcome
"""
_TOTALS_SQL = """
SELECT count(*) AS attempts,
       count(*) FILTER (WHERE attempt_number = 1) AS drafts,
       count(*) FILTER (WHERE attempt_number = 1 AND outcome IN ('passed', 'timeout_pass_through')) AS first_passed,
       count(*) FILTER (WHERE attempt_number = 1 AND outcome NOT IN ('skipped', 'not_gated_yet')) AS first_judged,
       count(*) FILTER (WHERE attempt_number > 1 AND outcome NOT IN ('skipped', 'not_gated_yet')) AS regenerations,
       count(*) FILTER (WHERE attempt_number > 1 AND outcome IN ('corrected', 'forced_through', 'rejected'))
           AS failed_regenerations,
       count(c.similarity_score) AS similarity_checks,
       count(*) FILTER (WHERE c.similarity_score >= a.max_action_similarity) AS similarity_failures,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY latency_ms) AS p90,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms) AS p99,
       coalesce(sum((c.token_usage->>'input_tokens')::bigint), 0) AS input_tokens,
       coalesce(sum((c.token_usage->>'output_tokens')::bigint), 0) AS output_tokens,
       coalesce(sum((c.token_usage->>'cache_read_input_tokens')::bigint), 0) AS cache_read_input_tokens,
       coalesce(sum((c.token_usage->>'cache_creation_input_tokens')::bigint), 0) AS cache_creation_input_tokens
FROM correction_logs c LEFT JOIN agent_evaluation_config a ON a.agent_id = c.agent_id
WHERE ($1::text IS NULL OR c.agent_id = $1) AND ($2::timestamptz IS NULL OR c.created_at >= $2)
"""


def _failed_scores(dims: Any) -> dict[str, dict[str, float | int]]:
    """Per dimension: count, mean and population sd of the scores of failed regenerations."""
    return {
        r["dimension"]: {"n": int(r["failed_n"]), "mean": float(r["failed_mean"]), "sd": float(r["failed_sd"])}
        for r in dims
        if r["failed_n"]
    }


async def _database_snapshot(url: str, agent: str | None, since: Any, timeout_s: float = 5.0) -> dict[str, Any]:
    """The /stats aggregates from ``correction_logs``. The logs keep scores but not the thresholds in force,
    so failures are counted against each agent's current thresholds; judge calls are not logged (None)."""
    from streams.cli.agents import known_in_database
    from streams.store import Store

    async with await Store.connect(url, timeout_s=timeout_s) as store:
        known = agent is None or await known_in_database(store, agent)
        totals = await store.pool.fetchrow(_TOTALS_SQL, agent, since)
        dims = await store.pool.fetch(_DIMENSIONS_SQL, agent, since)
        outcomes = await store.pool.fetch(_OUTCOMES_SQL, agent, since)
    if totals is None:
        raise ConfigurationError("no statistics: the correction_logs table is missing (run 'drift db migrate')")
    judged, regenerations, failed = (int(totals[k]) for k in ("first_judged", "regenerations", "failed_regenerations"))
    return {
        "attempts": int(totals["attempts"]),
        "drafts": int(totals["drafts"]),
        "outcomes": {r["outcome"]: int(r["n"]) for r in outcomes},
        "regenerations": regenerations,
        "failed_regenerations": failed,
        "regeneration_failure_rate": failed / regenerations if regenerations else 0.0,
        "failed_scores": _failed_scores(dims),
        "original_success_rate": int(totals["first_passed"]) / judged if judged else None,
        "dimension_failures": {r["dimension"]: int(r["failures"]) for r in dims},
        "dimension_timeouts": {r["dimension"]: int(r["timeouts"]) for r in dims},
        "mean_scores": {r["dimension"]: float(r["mean"]) for r in dims if r["mean"] is not None},
        "similarity_checks": int(totals["similarity_checks"]),
        "similarity_failures": int(totals["similarity_failures"]),
        "latency_ms": {q: totals[q] for q in ("p50", "p90", "p99")},
        "judge_calls": None,
        "token_usage": {k: int(totals[k]) for k in _TOKEN_KINDS},
        "dead_letters": None,
        "known": known,
    }

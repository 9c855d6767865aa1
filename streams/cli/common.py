"""Options and helpers shared by the command modules."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from engine.errors import DriftError
from engine.settings import Settings

T = TypeVar("T")

BrokerOpt = Annotated[
    str | None,
    typer.Option("--broker", help="Kafka bootstrap server (env DRIFT_BROKER; default 127.0.0.1:9092)."),
]
DatabaseOpt = Annotated[
    str | None,
    typer.Option("--database", help="PostgreSQL URL (env DRIFT_DATABASE_URL; default: the embedded database)."),
]
PrefixOpt = Annotated[
    str | None, typer.Option("--prefix", help="Topic prefix (env DRIFT_TOPIC_PREFIX; default 'drift.').")
]
UnsandboxedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsandboxed-code",
        help="Where the user-code sandbox (bubblewrap + seccomp) cannot be had, run code nodes / code judges "
        "without it instead of refusing; every output of the run says so (docs/formats/sandbox.md).",
    ),
]
JudgeOpt = Annotated[
    str | None,
    typer.Option(
        "--judge",
        help="scripted:FILE | replay:FILE | anthropic | openai-compatible | offline "
        "(default: anthropic when ANTHROPIC_API_KEY is set, else offline).",
    ),
]
PropositionsOpt = Annotated[
    Path | None, typer.Option("--propositions", help="Propositions directory (default: the bundled set).")
]
DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where the embedded database keeps its files (env DRIFT_DATA_DIR)."),
]


def settings_from(**overrides: Any) -> Settings:
    """Settings from the environment, overridden by the flags that were given."""
    mapping = {"database": "database_url", "prefix": "topic_prefix", "propositions": "propositions_dir"}
    return Settings.from_env(**{mapping.get(k, k): v for k, v in overrides.items()})


@contextlib.contextmanager
def quiet_kafka_logs(verbose: bool = False) -> Iterator[None]:
    """While a command connects, aiokafka's log line per failed attempt is silenced: the command says it once,
    in its own one-line error. Restored afterwards, so a running worker still logs a broker it loses."""
    import logging

    logger = logging.getLogger("aiokafka")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def run(coro: Coroutine[Any, Any, T], *, quiet: bool = True) -> T:
    """Run a command's coroutine. ``quiet`` (the default for every client command): aiokafka's log line per
    failed connection attempt is silenced, since the command reports an unreachable broker in one line of its
    own; a long-running service that must log a broker it loses later passes False."""
    if not quiet:
        return asyncio.run(coro)
    with quiet_kafka_logs():
        return asyncio.run(coro)


def urls_in_use(argv: list[str], environ: Mapping[str, str]) -> list[str]:
    """The database and broker URLs a command was given (flags and environment): what errors must mask."""
    urls = [environ.get(name, "") for name in ("DRIFT_DATABASE_URL", "DATABASE_URL", "DRIFT_BROKER")]
    for index, arg in enumerate(argv):
        for flag in ("--database", "--broker"):
            if arg == flag and index + 1 < len(argv):
                urls.append(argv[index + 1])
            elif arg.startswith(f"{flag}="):
                urls.append(arg.partition("=")[2])
    return [url for url in urls if url]


#: SQLSTATE of "relation does not exist": a query met a database ``drift db migrate`` never ran on.
UNDEFINED_TABLE = "42P01"


def missing_schema(exc: BaseException, argv: list[str], environ: Mapping[str, str]) -> str | None:
    """The one line for an error that escaped a command because the database has no persona-drift tables (a
    relation is missing: never migrated, or an older schema), whichever command and query met it; None for any
    other error. Checked once, in :func:`streams.cli.main`, so every command that reads the database says it."""
    seen: BaseException | None = exc
    while seen is not None and getattr(seen, "sqlstate", None) != UNDEFINED_TABLE:
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    from engine.redaction import mask_url

    where = mask_url(database_in_use(argv, environ))
    return f"the database at {where} has no persona-drift tables: run 'drift db migrate' (or 'drift up')"


def database_in_use(argv: list[str], environ: Mapping[str, str]) -> str:
    """The database a command was pointed at: ``--database``, else the environment's, else the embedded one."""
    flagged = [u for u in urls_in_use(argv, {}) if u.startswith(("postgres://", "postgresql://"))]
    if flagged:
        return flagged[-1]
    try:
        return Settings.from_env(environ).database()
    except DriftError:  # settings that do not load: name what can be named
        return environ.get("DRIFT_DATABASE_URL") or environ.get("DATABASE_URL") or "(the configured database)"

"""Options and helpers shared by the command modules."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

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


def run(coro: Coroutine[Any, Any, T]) -> T:
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

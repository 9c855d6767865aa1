"""Options and helpers shared by the command modules."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
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


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)

"""``drift up`` (the whole embedded stack) and ``drift worker`` (a gate worker against a running stack)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.errors import ConfigurationError
from engine.redaction import mask_url
from engine.settings import Settings
from streams.cli.common import (
    BrokerOpt,
    DatabaseOpt,
    DataDirOpt,
    JudgeOpt,
    PrefixOpt,
    PropositionsOpt,
    quiet_kafka_logs,
    run,
    settings_from,
)

if TYPE_CHECKING:
    from engine.judges.base import Judge
    from streams.services.stats import RetryCounts

app = typer.Typer()

PartitionsOpt = Annotated[int, typer.Option("--partitions", min=1, help="Partitions per topic when creating topics.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log at INFO level.")]


def _say(line: str) -> None:
    print(line, flush=True)


def _usable_data_dir(path: Path) -> None:
    """``--data-dir`` must be a directory this process can create and write, checked before anything starts."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".drift-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigurationError(f"--data-dir {path}: cannot be used: {exc.strerror or exc}") from None


def _free_web_port(settings: Settings) -> Settings:
    """The configured web port when it is free, else any free port (a second worker on the same host)."""
    import errno
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((settings.web_host, settings.web_port))
            return settings
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ConfigurationError(
                    f"web server: cannot listen on {settings.web_host}:{settings.web_port}: {exc.strerror}"
                ) from None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((settings.web_host, 0))
        return settings.with_(web_port=int(sock.getsockname()[1]))


async def _reachable(settings: Settings, partitions: int) -> list[str]:
    """Fail fast (within DRIFT_CONNECT_TIMEOUT_S) on an unreachable database or broker; create the prefix's
    topics (returns the names created now)."""
    from streams.store import Store
    from streams.wire.kafka import create_topics

    async with await Store.connect(settings.database(), min_size=1, max_size=1, timeout_s=settings.connect_timeout_s):
        pass
    return await create_topics(settings, partitions=partitions, timeout_s=settings.connect_timeout_s)


def _note_judge(name: str) -> None:
    from engine.judges.offline import LIMITS, NAME

    if name == NAME:
        print(f"drift: note: {LIMITS}", file=sys.stderr)


def _warn_if_empty(settings: Settings) -> None:
    folder = Path(settings.propositions_dir)
    if folder.is_dir() and not any(folder.rglob("*.yaml")) and not any(folder.rglob("*.yml")):
        print(
            f"drift: warning: {folder} holds no proposition or persona files: the gate judges with no propositions "
            "(every LLM check passes); see 'drift init DIR'",
            file=sys.stderr,
        )


async def _prepare(settings: Settings, partitions: int, timeout_s: float) -> None:
    """Migrations and topics, before the worker starts (within ``timeout_s`` per service)."""
    from streams.store import Store
    from streams.wire.kafka import create_topics

    async with await Store.connect(settings.database(), timeout_s=timeout_s) as store:
        await store.migrate()
    await create_topics(settings, partitions=partitions, timeout_s=timeout_s)


def _start_embedded(
    stack: contextlib.ExitStack, settings: Settings, *, database: str | None, broker: str | None, kafka_port: int
) -> tuple[Settings, Callable[[], None]]:
    """Start the embedded database and broker unless given; ``stack`` stops the broker first, then the database.

    Returns the settings pointing at them and a callable that kills both at once (a second Ctrl-C)."""
    from streams.embedded import start_broker, start_database
    from streams.worker.shutdown import kill_all

    kills: list[Callable[[], None]] = []
    if database is None and not settings.database_url:
        db = start_database(settings.data_dir)
        stack.callback(db.stop)
        kills.append(db.kill)
        settings = settings.with_(database_url=db.url)
    if broker is None:
        embedded = start_broker(kafka_port, log_file=settings.data_dir / "tansu.log")
        stack.callback(embedded.stop)
        kills.insert(0, embedded.kill)
        settings = settings.with_(broker=embedded.bootstrap)
    return settings, kill_all(*kills)


def _worker_judge(settings: Settings) -> tuple[Judge, RetryCounts]:
    """A worker's judge, without limits of its own (the worker's budget applies them), and the worker's
    ``drift_retries_total``, which counts the judge's retries too."""
    from engine.judges.factory import make_judge
    from streams.services.stats import RetryCounts

    retries = RetryCounts()
    return make_judge(settings.judge, settings, own_limits=False, on_retry=retries), retries


@app.command()
def up(
    kafka_port: Annotated[int, typer.Option("--kafka-port", help="Port of the embedded broker.")] = 9092,
    data_dir: DataDirOpt = None,
    broker: BrokerOpt = None,
    database: DatabaseOpt = None,
    prefix: PrefixOpt = None,
    judge: JudgeOpt = None,
    propositions: PropositionsOpt = None,
    partitions: PartitionsOpt = 3,
    verbose: VerboseOpt = False,
) -> None:
    """Start embedded Tansu + embedded PostgreSQL, migrate, create topics and run a gate worker.

    Prints one line starting with 'ready' (bootstrap server and database URL) once the worker has its
    partitions. SIGINT/SIGTERM stop everything. --broker / --database use running services instead.
    """
    from engine.library import PropositionLibrary
    from streams.worker.shutdown import interrupts_abort

    settings = settings_from(broker=broker, database=database, prefix=prefix, judge=judge, propositions=propositions,
                             data_dir=data_dir)  # fmt: skip
    _usable_data_dir(settings.data_dir)
    _warn_if_empty(settings)
    PropositionLibrary(settings.propositions_dir).validate()
    judge_impl, retries = _worker_judge(settings)
    settings = _free_web_port(settings)
    wait_s = settings.connect_timeout_s if broker else max(15.0, settings.connect_timeout_s)  # embedded: just started
    with contextlib.ExitStack() as stack:
        settings, kill = _start_embedded(stack, settings, database=database, broker=broker, kafka_port=kafka_port)
        try:
            _serve_stack(settings, judge_impl, kill, partitions=partitions, wait_s=wait_s, verbose=verbose,
                         retries=retries)  # fmt: skip
        finally:
            with interrupts_abort(kill):  # the worker is down: stop the broker, then the database
                stack.close()
    _say("stopped")


def _serve_stack(
    settings: Settings, judge: Judge, kill: Callable[[], None], *, partitions: int, wait_s: float, verbose: bool,
    retries: RetryCounts,
) -> None:  # fmt: skip
    """``drift up`` once its services run: migrate, create the topics, run the worker until it is stopped."""
    with quiet_kafka_logs(verbose):
        run(_prepare(settings, partitions, wait_s))
    _note_judge(judge.name)
    from streams.worker.runner import run_worker  # Faust: imported once the services answered

    database_shown = mask_url(settings.database())  # never a password in the 'ready' line (CI logs)
    ready = (f"ready broker={mask_url(settings.broker)} database={database_shown} judge={judge.name} "
             f"web=http://{settings.web_host}:{settings.web_port}")  # fmt: skip
    run_worker(settings, judge, partitions=partitions, on_ready=lambda: _say(ready), on_abort=kill,
               loglevel="INFO" if verbose else "WARNING", retries=retries)  # fmt: skip


@app.command()
def worker(
    broker: BrokerOpt = None,
    database: DatabaseOpt = None,
    prefix: PrefixOpt = None,
    judge: JudgeOpt = None,
    propositions: PropositionsOpt = None,
    partitions: PartitionsOpt = 3,
    sinks: Annotated[bool, typer.Option("--sinks/--no-sinks", help="Run the Postgres sinks in this worker.")] = True,
    verbose: VerboseOpt = False,
) -> None:
    """Run a gate worker against the configured broker and database (scale out by running several)."""
    from engine.library import PropositionLibrary
    from streams.worker.startup import StartupClock

    clock = StartupClock()
    clock.mark("cli imports")

    settings = settings_from(broker=broker, database=database, prefix=prefix, judge=judge, propositions=propositions)
    if not sinks:
        settings = settings.with_(sinks=False)
    _warn_if_empty(settings)
    PropositionLibrary(settings.propositions_dir).validate()
    judge_impl, retries = _worker_judge(settings)
    settings = _free_web_port(settings)
    with quiet_kafka_logs(verbose):
        created = run(_reachable(settings, partitions))
    _note_judge(judge_impl.name)
    clock.mark("checks")
    from streams.worker.runner import run_worker  # Faust: imported once the services answered

    if created:
        print(f"drift: created {len(created)} topic(s) for prefix {settings.topic_prefix!r}", file=sys.stderr)
    ready = (f"ready worker broker={mask_url(settings.broker)} judge={judge_impl.name} "
             f"prefix={settings.topic_prefix} web=http://{settings.web_host}:{settings.web_port}")  # fmt: skip
    run_worker(settings, judge_impl, partitions=partitions, on_ready=lambda: _say(ready),
               loglevel="INFO" if verbose else "WARNING", retries=retries, clock=clock)  # fmt: skip
    print("stopped", file=sys.stderr)


@app.command("sinks")
def sinks_command(
    broker: BrokerOpt = None, database: DatabaseOpt = None, prefix: PrefixOpt = None, verbose: VerboseOpt = False
) -> None:
    """Run only the Postgres sinks (correction logs, messages): pair with 'drift worker --no-sinks'."""
    import asyncio
    import signal

    from streams.services.sinks import run_sinks
    from streams.store import Store
    from streams.worker.shutdown import abort

    settings = settings_from(broker=broker, database=database, prefix=prefix)
    with quiet_kafka_logs(verbose):
        run(_reachable(settings, partitions=3))

    async def main() -> None:
        async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
            await store.migrate()

            async def connected() -> Store:
                return store

            ready = f"ready sinks broker={mask_url(settings.broker)} prefix={settings.topic_prefix}"
            task = asyncio.ensure_future(run_sinks(settings, connected, on_ready=lambda: _say(ready)))
            loop = asyncio.get_running_loop()

            def on_signal() -> None:  # the first stops consuming (each batch is committed once written)
                if task.cancelling():
                    abort(lambda: None)  # the second: at once
                task.cancel()

            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, on_signal)
            with contextlib.suppress(asyncio.CancelledError):
                await task

    run(main(), quiet=False)  # the sinks log a broker they lose while they run
    _say("stopped")

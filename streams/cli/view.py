"""``drift view``: the web page — live verdicts, agents over time, evaluation and format runs."""

from __future__ import annotations

import asyncio
import ipaddress
import os
from typing import TYPE_CHECKING, Annotated

import typer

from engine.errors import ConfigurationError
from streams.cli.common import BrokerOpt, DatabaseOpt, PrefixOpt, run, settings_from

if TYPE_CHECKING:
    from engine.settings import Settings

app = typer.Typer()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command("view")
def view(
    host: Annotated[str, typer.Option("--host", help="Address to bind (beyond loopback needs DRIFT_VIEW_TOKEN).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to bind.")] = 8686,
    broker: BrokerOpt = None,
    database: DatabaseOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Serve the web page: live verdicts, per-agent scores over time, evaluation and format runs (read-only)."""
    settings = settings_from(broker=broker, database=database, prefix=prefix)
    token = settings.view_token.get_secret_value() if settings.view_token else ""
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to serve on {host} without a token: set DRIFT_VIEW_TOKEN (or bind 127.0.0.1)"
        )
    try:
        run(_serve(settings, host, port, token))
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


async def _serve(settings: Settings, host: str, port: int, token: str) -> None:
    from aiohttp import web

    from streams.store import Store
    from streams.view.live import LiveVerdicts
    from streams.view.queries import ViewQueries
    from streams.view.server import build_app

    async with await Store.connect(settings.database(), max_size=4, timeout_s=settings.connect_timeout_s) as store:
        live = LiveVerdicts(settings)
        runner = web.AppRunner(build_app(settings, ViewQueries(store), live, token), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None
        await live.start()
        login = f"/login?token={token}" if token else "/"
        print(f"view: http://{host}:{port}{login}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await live.stop()
            await runner.cleanup()

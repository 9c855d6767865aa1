"""The store: an asyncpg pool with the queries of every concern, and the migrations. Parameterised SQL only.

Migrations are the plain ``.sql`` files in ``streams/store/migrations/``, applied in name order and recorded in
``schema_migrations`` (``drift db migrate`` is idempotent). Sink writes are batched and idempotent: a
redelivered record never makes a duplicate row.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg
import orjson

from engine.errors import ConfigurationError, ServiceError
from engine.redaction import ENCODING_HINT, mask_text, mask_url, userinfo_needs_encoding
from streams.store.anchors import AnchorQueries
from streams.store.configuration import ConfigurationQueries
from streams.store.messages import MessageQueries
from streams.store.monitor import MonitorQueries
from streams.store.restore import RestoreQueries
from streams.store.shadows import ShadowQueries

MIGRATIONS = Path(__file__).parent / "migrations"


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json, decoder=orjson.loads, schema="pg_catalog")


class Store(ConfigurationQueries, MessageQueries, RestoreQueries, MonitorQueries, AnchorQueries, ShadowQueries):
    """An asyncpg pool plus every query persona-drift runs (one mixin per concern)."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def connect(cls, url: str, *, min_size: int = 1, max_size: int = 8, timeout_s: float = 60.0) -> Store:
        if not url:
            raise ConfigurationError("no database URL: pass --database or set DRIFT_DATABASE_URL")
        try:
            pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, init=_init_connection,
                                             timeout=timeout_s)  # fmt: skip
        except (OSError, ValueError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            reason = mask_text(str(exc) or type(exc).__name__, [url])  # drivers may echo the DSN or its password
            reason += f"; {ENCODING_HINT}" if userinfo_needs_encoding(url) else ""
            raise ServiceError(f"cannot connect to the database {mask_url(url)}: {reason}") from None
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- migrations -------------------------------------------------------------------------------

    async def migrate(self) -> list[str]:
        """Apply pending migrations in order; return the names applied now."""
        applied_now: list[str] = []
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(7311001)")
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
            for path in sorted(MIGRATIONS.glob("*.sql")):
                if path.name in done:
                    continue
                await conn.execute(path.read_text(encoding="utf-8"))
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
                applied_now.append(path.name)
        return applied_now

"""Persistence: PostgreSQL through asyncpg, the only asyncpg code in the project, with its migrations.

Migrations are the plain ``.sql`` files in ``streams/store/migrations/`` (applied in name order). One module
per concern; :class:`Store` (the connection pool, messages and correction logs, configuration) is re-exported
here so ``from streams.store import Store`` is the one way in. May import: :mod:`engine` and
:mod:`streams.wire`; nothing else under :mod:`streams`.
"""

from streams.store.evaluations import DuplicateRequest, PostgresEvaluationStore, PostgresMessageSource, StoredRun
from streams.store.postgres import Store

__all__ = ["DuplicateRequest", "PostgresEvaluationStore", "PostgresMessageSource", "Store", "StoredRun"]

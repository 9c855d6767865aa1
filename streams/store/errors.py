"""How a database sink reacts to a failed write: wait and retry, or set the offending record aside.

*Transient* errors say nothing about the records: the connection was lost, the server is starting or shutting
down, a serialization failure or deadlock, too many connections, out of resources. The write is retried with
backoff, for as long as it takes: records are never dropped because the database is away.

*Permanent* errors are the records' fault and would fail again on every retry: the data exception class (SQLSTATE
``22xxx``: invalid byte sequence, NUL in text, value too long, numeric out of range…), the integrity class
(``23xxx``), and the client-side encoding errors asyncpg raises before sending (an argument it cannot encode).
The sink splits the batch to find the record, sends it to the dead-letter topic with the database's reason and
writes the rest.

Any other database error (an undefined table, a permission denied) is an operator's problem that no record can
fix: it is treated as transient, so the sink waits — logged at every retry — instead of dead-lettering every
record of the stream.
"""

from __future__ import annotations

from typing import Literal

import asyncpg

from engine.errors import ServiceError

WriteError = Literal["transient", "permanent"]

#: SQLSTATE classes whose errors are caused by the records themselves.
PERMANENT_CLASSES = frozenset({"22", "23"})


def classify(exc: BaseException) -> WriteError | None:
    """``transient`` or ``permanent`` for a failed database write; None when ``exc`` is not a database or
    connection error at all (a bug: the caller re-raises it)."""
    if isinstance(exc, asyncpg.PostgresError):
        state = str(getattr(exc, "sqlstate", "") or "")
        return "permanent" if state[:2] in PERMANENT_CLASSES else "transient"
    if isinstance(exc, asyncpg.InterfaceError):  # client side: a value it cannot encode is the record's fault
        return "permanent" if isinstance(exc, ValueError) else "transient"
    if isinstance(exc, asyncpg.InternalClientError):  # a connection left mid-operation (the server went away
        return "transient"  # under it, seen in the postgres-outage chaos scenario): retried on another one
    if isinstance(exc, UnicodeError):
        return "permanent"
    if isinstance(exc, OSError | ConnectionError | TimeoutError | ServiceError):
        return "transient"
    return None


def describe(exc: BaseException) -> str:
    """The database's reason, with its SQLSTATE when it has one."""
    state = getattr(exc, "sqlstate", None)
    text = str(exc) or type(exc).__name__
    return f"{text} (SQLSTATE {state})" if state else text

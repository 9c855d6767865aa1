"""Every private name of Faust, mode and aiokafka this project touches, in one package.

The worker goes below Faust's public API in three spots, each for a measured reason (docs/gate-design.md):
the fast lanes (:mod:`streams.runtime.transport`) drive Faust's consumer bookkeeping themselves, undecodable
batches (:mod:`streams.runtime.undecodable`) are skipped inside aiokafka's fetcher, and the gate's tables
(:mod:`streams.runtime.tables`, :mod:`streams.worker.lanes`) write the in-memory store directly. Reads and
writes of private attributes go through the functions of this package, one module per concern — Faust's
consumer (:mod:`.consumer`), aiokafka's group coordinator (:mod:`.group`, :mod:`.rejoin`), its fetcher
(:mod:`.fetcher`) and
Faust's tables (:mod:`.tables`) — each listing the names it reaches; methods overridden by subclasses
elsewhere are listed here. ``tests/streams/test_faust_private.py`` checks every entry of
:data:`PRIVATE_NAMES` against the installed libraries, so an upgrade that moves one fails there, not in
production; ``pyproject.toml`` pins the upper bounds of faust-streaming, mode-streaming and aiokafka for the
same reason. Callers import the package (``from streams.runtime import faust_private``), never a module of it.
"""

from __future__ import annotations

from streams.runtime.faust_private import consumer, fetcher, group, rejoin, tables
from streams.runtime.faust_private.consumer import (
    acked_offsets,
    active_partitions,
    add_gap,
    committed_offset,
    consumer_thread,
    fetch_loop_stopped,
    in_gap,
    kafka_consumer,
    kafka_fetcher,
    read_offset,
    release,
    seek_to_committed,
    set_read_offset,
    start_commits_at,
)
from streams.runtime.faust_private.fetcher import (
    UNPACK_BATCH_LOCAL,
    UNPACK_FUNCTION,
    fetch_max_wait,
    fetch_results,
    on_fetch_responses,
    partition_records,
    records_iterator,
    records_partition,
    replace_fetch_results,
    replace_records_iterator,
    set_fetch_max_wait,
)
from streams.runtime.faust_private.group import (
    end_member,
    group_generation,
    group_leader_stays,
    group_member,
    group_of,
    heal_departed_leader,
    join_refusal,
    leads_group,
    leave_group_unless_leader,
    rejoin_if_rebalancing,
    rejoin_now,
    stop_rejoining,
)
from streams.runtime.faust_private.rejoin import Claims, run_through_joins, tp_name
from streams.runtime.faust_private.tables import (
    close_table_registration,
    set_current_event,
    table_recovery,
    table_store_url,
    update_table_channels,
)

#: Methods our subclasses override (and call through ``super()``), with the modules that do.
OVERRIDDEN: tuple[tuple[str, str, str], ...] = (
    # streams.runtime.transport
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_fetch_records", "method"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_create_worker_consumer", "method"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_highwaters", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_new_consumer_thread", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_drain_messages", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_new_offset", "method"),
    # streams.worker.runner
    ("mode.worker:Worker", "_on_sigint", "method"),
    ("mode.worker:Worker", "_on_sigterm", "method"),
    ("mode.worker:Worker", "_gather_all", "method"),
    # streams.runtime.readahead (the table manager's own steps, overridden by streams.runtime.faust_app, are
    # reached through .tables)
    ("faust.tables.recovery:Recovery", "_build_offsets", "method"),
)

#: (owner, name, kind): ``owner`` is ``module:Class``, ``module:Class.function`` or ``module``; ``kind`` is
#: ``method`` (defined on the class or a base), ``attribute`` (assigned as ``self.<name>`` in the class or a
#: base), ``local`` (a local variable of the function) or ``global`` (a module attribute).
PRIVATE_NAMES: tuple[tuple[str, str, str], ...] = (
    OVERRIDDEN + consumer.NAMES + group.NAMES + rejoin.NAMES + fetcher.NAMES + tables.NAMES
)

__all__ = [
    "OVERRIDDEN",
    "PRIVATE_NAMES",
    "UNPACK_BATCH_LOCAL",
    "UNPACK_FUNCTION",
    "Claims",
    "acked_offsets",
    "active_partitions",
    "add_gap",
    "close_table_registration",
    "committed_offset",
    "consumer_thread",
    "end_member",
    "fetch_loop_stopped",
    "fetch_max_wait",
    "fetch_results",
    "group_generation",
    "group_leader_stays",
    "group_member",
    "group_of",
    "heal_departed_leader",
    "in_gap",
    "join_refusal",
    "kafka_consumer",
    "kafka_fetcher",
    "leads_group",
    "leave_group_unless_leader",
    "on_fetch_responses",
    "partition_records",
    "read_offset",
    "records_iterator",
    "records_partition",
    "rejoin_if_rebalancing",
    "rejoin_now",
    "release",
    "replace_fetch_results",
    "replace_records_iterator",
    "run_through_joins",
    "seek_to_committed",
    "set_current_event",
    "set_fetch_max_wait",
    "set_read_offset",
    "start_commits_at",
    "stop_rejoining",
    "table_recovery",
    "table_store_url",
    "tp_name",
    "update_table_channels",
]

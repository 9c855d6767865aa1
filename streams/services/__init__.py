"""The services a worker hosts: the gate, orchestrator steps, offline evaluations, the Postgres sinks, the
per-agent configuration cache and the gate statistics.

Decisions are :mod:`engine`'s; a service here moves records between topics, the store and the engine. A service
receives narrow ports as constructor arguments (:mod:`streams.services.context`), never the worker. May
import: :mod:`engine`, :mod:`streams.wire`, :mod:`streams.store`, :mod:`streams.runtime`; never
:mod:`streams.worker` (which builds them), :mod:`streams.client` or the CLI.
"""

"""persona-drift streaming layer: the only Faust/Kafka code, in layers that import downwards only.

- :mod:`streams.wire` — the public contract on the broker: payloads, topic names, dead letters, client settings.
- :mod:`streams.store` — PostgreSQL through asyncpg (the only asyncpg code) and its migrations.
- :mod:`streams.runtime` — worker plumbing that knows no service: Faust seams, transport, output producer,
  tables, history view, per-key dispatch.
- :mod:`streams.services` — what a worker hosts: the gate, steps, evaluations, sinks, configurations, stats.
- :mod:`streams.worker` — the composition root: builds one worker from a :class:`engine.settings.Settings`.
- :mod:`streams.client` — client side: the SDK (``from streams.client import GateClient``), admin, tail, replay,
  the simulation runner.
- :mod:`streams.embedded` — the embedded broker and database of ``drift up``.
- :mod:`streams.cli` and :mod:`streams.view` — the ``drift`` command and the web view (may import any layer).

``docs/architecture.md`` draws a draft's path through these and states the import rule, which
``tests/test_import_graph.py`` enforces. Nothing here does work at import time except
:mod:`streams.worker.entry` (the module ``faust -A`` loads).
"""

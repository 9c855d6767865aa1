"""The client side of the service: what an orchestrator or an operator runs outside a worker.

The SDK (``from streams.client import GateClient``, in :mod:`streams.client.sdk`), one-shot admin producers,
``drift tail``, ``drift replay``, the simulation session runner and the experiment runner. May import: :mod:`engine`,
:mod:`streams.wire`, :mod:`streams.store`; never the worker side (:mod:`streams.runtime`,
:mod:`streams.services`, :mod:`streams.worker`) or the CLI.
"""

from streams.client.sdk import GateClient

__all__ = ["GateClient"]

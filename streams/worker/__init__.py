"""The composition root of a gate worker: the Faust app factory, the fast lanes wiring the gate to its topics,
``/metrics``, the in-process runner and Ctrl-C handling.

``faust -A streams.worker.entry worker`` loads :mod:`streams.worker.entry`, the only module in the project that
does work at import time. May import: :mod:`engine`, :mod:`streams.wire`, :mod:`streams.store`,
:mod:`streams.runtime`, :mod:`streams.services`; never :mod:`streams.client` or the CLI.
"""

"""Drift monitor: anytime-valid detectors on agents' score streams, and whether the agent or the judge moved.

* :mod:`engine.monitor.detector` — the betting e-process pair on bounded scores (the guarantee is stated there);
* :mod:`engine.monitor.stream` — one monitored stream: its reference (a baseline or its first observations),
  its detector, its open alert;
* :mod:`engine.monitor.attribution` — an alert's cause: ``judge`` (the anchor set moved, or most of the cast
  moved at once), ``agent``, or ``unknown`` (no anchor set).
"""

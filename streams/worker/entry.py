"""Worker module for ``faust -A streams.worker.entry worker``: the only module that does work at import time.

It builds the gate app from ``DRIFT_*`` environment settings. ``drift worker`` is the usual way to run it. A bad
setting ends the process as ``drift`` would: one ``drift: DRIFT_X: …`` line per bad value and exit code 2.
"""

from __future__ import annotations

import sys

from engine.errors import ConfigurationError
from engine.judges.factory import make_judge
from engine.settings import Settings
from streams.services.stats import RetryCounts
from streams.worker.app import build_app

try:
    settings = Settings.from_env()
except ConfigurationError as exc:
    for line in str(exc).splitlines():
        print(f"drift: {line}", file=sys.stderr)
    raise SystemExit(2) from None
retries = RetryCounts()  # drift_retries_total, the judge's retries included
app, worker = build_app(settings, make_judge("", settings, own_limits=False, on_retry=retries), retries=retries)

"""Worker module for ``faust -A streams.worker.entry worker``: the only module that does work at import time.

It builds the gate app from ``DRIFT_*`` environment settings. ``drift worker`` is the usual way to run it.
"""

from __future__ import annotations

from engine.judges.factory import make_judge
from engine.settings import Settings
from streams.worker.app import build_app

settings = Settings.from_env()
app, worker = build_app(settings, make_judge("", settings, own_limits=False))

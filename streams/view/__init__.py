"""``drift view``: a read-only web page over the gate and the evaluation record.

* :mod:`streams.view.queries` — every query the page runs (parameterised, paginated, bounded);
* :mod:`streams.view.live` — verdicts as they happen, from the ``verdicts`` topic, fanned out to the open
  pages as server-sent events;
* :mod:`streams.view.server` — the aiohttp application: JSON API, the static front end in ``static/`` (plain
  HTML, CSS and JavaScript, no build step), and the token check when bound beyond loopback.

May import ``engine`` and the store and Kafka helpers of ``streams``; runs in its own process (``drift view``),
never inside a worker.
"""

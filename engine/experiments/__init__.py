"""Experiments: treatment vs control, analysed the way TinyTroupe's Table 1 was, and more.

* :mod:`engine.experiments.data` — the samples of one experiment (per metric, per arm, with the agent of
  every (agent, session) score when known);
* :mod:`engine.experiments.raw` — the paper's raw result files as experiment data;
* :mod:`engine.experiments.paper` — the paper's published Table 1 values;
* :mod:`engine.experiments.analysis` — Welch's t, Cohen's d, bootstrap and cluster-bootstrap intervals, Holm
  correction, agreement in direction with the paper;
* :mod:`engine.experiments.render` and :mod:`engine.experiments.charts` — Markdown, JSON and HTML reports and
  PNG charts.

May import ``engine`` (models, statistics, errors). Never Faust, aiokafka or asyncpg; charts import
matplotlib only when drawn.
"""

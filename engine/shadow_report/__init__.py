"""A shadow's report (issue 30, point 3): what a candidate judged beside the live gate would have changed.

* :mod:`engine.shadow_report.agreement` — the decision agreement, Cohen's κ and the paired bootstrap intervals;
* :mod:`engine.shadow_report.report` — the report of one shadow from its stored verdicts: confusion table, score
  differences per dimension, the attempts that would flip, cost on both sides;
* :mod:`engine.shadow_report.render` — that report as Markdown, JSON and a self-contained HTML page.
"""

"""Shadow gating (issue 30): a candidate judged beside the live gate, and what it would have changed.

* :mod:`engine.shadow.agreement` — the decision agreement, Cohen's κ and the paired bootstrap intervals;
* :mod:`engine.shadow.report` — the report of one shadow from its stored verdicts: confusion table, score
  differences per dimension, the attempts that would flip, cost on both sides;
* :mod:`engine.shadow.render` — that report as Markdown, JSON and a self-contained HTML page.
"""

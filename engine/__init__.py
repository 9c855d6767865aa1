"""persona-drift core: models, propositions, prompts, scoring, checks, gate decisions, statistics.

Pure functions and frozen values. No Kafka, Faust or database code lives here; I/O adapters
(judges) sit in ``engine.judges`` behind the :class:`engine.judges.base.Judge` protocol.
"""

__version__ = "0.1.0"

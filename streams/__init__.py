"""persona-drift streaming layer: the only Faust/Kafka code (app, topics, tables, agents, sinks, client SDK).

Nothing here does work at import time except :mod:`streams.worker`.
"""

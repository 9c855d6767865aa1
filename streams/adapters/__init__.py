"""Framework adapters (client side): the gate inside the frameworks agents are built with.

- :mod:`streams.adapters.session`: the framework-neutral part — :class:`GateSession` (one gated turn through
  :meth:`streams.client.GateClient.converse`, the step directives, stimuli), :class:`GatePolicy` (fail-open or
  fail-closed when the gate cannot answer) and :func:`gate_session`;
- :mod:`streams.adapters.autogen`: ``GatedAgent`` for AutoGen AgentChat teams (extra ``[autogen]``);
- :mod:`streams.adapters.langgraph`: ``gated_node`` for LangGraph graphs (extra ``[langgraph]``).

The framework modules are imported only when asked for: importing this package pulls in neither framework.
docs/integrations.md has the guide.
"""

from streams.adapters.session import GATE_SOURCE, GatePolicy, GateSession, Turn, gate_session, render_directives

__all__ = ["GATE_SOURCE", "GatePolicy", "GateSession", "Turn", "gate_session", "render_directives"]

"""Actors: who speaks for an agent. Given a persona, what the agent has seen and an optional nudge or gate
feedback, an :class:`~engine.actors.base.Actor` produces the agent's next message or chooses silence.

Simulations (the session runner), MetaReason targets (``actor:AGENT_ID``) and AgentV targets all drive agents
through this one port.
"""

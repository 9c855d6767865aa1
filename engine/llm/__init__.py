"""Free-form text generation: the port that actors and the evaluation formats use for an LLM's words.

Judges (:mod:`engine.judges`) answer claims with 0–9 scores or booleans; a :class:`~engine.llm.base.TextModel`
answers a conversation with text (an agent's next message, a Plexus classifier's reply, a MetaReason target's
answer). Concrete models (Anthropic, OpenAI-compatible, scripted) live beside the protocol and share the
judges' call policy (deadline, retries, concurrency, token accounting).
"""

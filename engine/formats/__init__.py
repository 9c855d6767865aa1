"""The evaluation formats (MetaReason prompt families, Plexus scorecards, AgentV eval cases) and what they share.

One sub-package per format (loader, model, runner) sits on the same ports: judges (:mod:`engine.judges`) for
scored claims, text models (:mod:`engine.llm`) for free-form replies, actors (:mod:`engine.actors`) for persona
agents, and here:

* :mod:`engine.formats.targets` — who answers an item (``actor:AGENT_ID``, ``command:CMD``,
  ``recorded:FILE.jsonl``), with a cache so the same prompt is never paid for twice;
* :mod:`engine.formats.sandbox` — running a program out of process with CPU, memory, wall-clock limits and an
  empty environment (targets use it as it is);
* :mod:`engine.formats.usercode` — code named in a file (Plexus code nodes, AgentV code judges) in one sandbox:
  bubblewrap (:mod:`engine.formats.bwrap`) with a libseccomp filter (:mod:`engine.formats.seccomp_filter`) on
  top of those limits, or not at all (docs/formats/sandbox.md);
* :mod:`engine.formats.results` — one result model for every format's run, stored the same way;
* :mod:`engine.formats.registry` — which YAML kind a file is, so ``drift validate PATH…`` checks any of them.

May import: ``engine`` (models, errors, judges, llm, actors, propositions.yamlsource). Never Faust, aiokafka or
asyncpg.
"""

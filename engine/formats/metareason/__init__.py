"""MetaReason prompt families (seed doc 002): load and validate, sample, render, run, and score.

:mod:`.model` (the file), :mod:`.loader` (located validation), :mod:`.sampling` (designs and variants),
:mod:`.rendering` (the Jinja2 sandbox), :mod:`.oracles` with :mod:`.embeddings` and :mod:`.custom`,
:mod:`.runner` (targets, cache, concurrency, journal), :mod:`.statistics` and :mod:`.summary` (exact
beta-binomial posteriors), :mod:`.kind` (the ``drift validate`` registration). The format is documented in
``docs/formats/metareason.md``.
"""

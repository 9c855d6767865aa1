"""Benchmarks: each module measures one thing and merges its numbers into ``ops/bench/results.json``."""

"""Judges: adapters that answer :class:`engine.judges.base.JudgeRequest`."""

"""The reliability suite (``make chaos``): fault scenarios against the embedded stack, each a module with one
entry function that returns its figures (see :mod:`ops.chaos.__main__` and RELIABILITY.md)."""

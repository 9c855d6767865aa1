"""Simulations (seed doc 001, TinyTroupe Table 1): scenarios, session plans, populations. Pure code: the
runner that drives sessions through the service lives in :mod:`streams.client.simulate`."""

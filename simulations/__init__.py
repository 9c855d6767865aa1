"""The bundled simulation files — scenarios, population profiles and the tiny population — shipped as package data.

This directory is the package ``persona_drift_simulations`` of the installed distribution (``pyproject.toml``
maps it with ``package-dir``); :func:`engine.settings.bundled_simulations` finds it through
``importlib.resources``, in a wheel install and in an editable one alike. It holds no code.
"""

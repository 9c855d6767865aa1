"""The bundled proposition files, personas and intervention examples, shipped as package data.

This directory is the package ``persona_drift_propositions`` of the installed distribution (``pyproject.toml``
maps it with ``package-dir``); :func:`engine.settings.bundled_propositions` finds it through
``importlib.resources``, in a wheel install and in an editable one alike. It holds no code.
"""

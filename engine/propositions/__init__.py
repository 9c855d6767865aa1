"""Proposition files: the schema, the loader and merge of ``_default.yaml`` + agent files, claim templates.

Typical use::

    from engine.propositions import load_set, render_claim, EVALUATION_WINDOW_DEFAULTS

    propositions = load_set(settings.propositions_dir, Dimension.ADHERENCE, "michael")
    window = propositions.window(EVALUATION_WINDOW_DEFAULTS)
    claim = render_claim(propositions.propositions[0].claim, {"agent_name": "Michael Scott"})
"""

from engine.propositions.loader import (
    list_agents,
    list_dimensions,
    load_file,
    load_set,
)
from engine.propositions.models import (
    ACTION_LEVEL_WINDOW_DEFAULTS,
    EVALUATION_WINDOW_DEFAULTS,
    Proposition,
    PropositionFile,
    PropositionSet,
    Window,
)
from engine.propositions.templates import TEMPLATE_VARIABLES, placeholders, render_claim

__all__ = [
    "ACTION_LEVEL_WINDOW_DEFAULTS",
    "EVALUATION_WINDOW_DEFAULTS",
    "TEMPLATE_VARIABLES",
    "Proposition",
    "PropositionFile",
    "PropositionSet",
    "Window",
    "list_agents",
    "list_dimensions",
    "load_file",
    "load_set",
    "placeholders",
    "render_claim",
]

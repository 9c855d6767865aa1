"""TinyTroupe's published Table 1 (arXiv:2507.09788, June 2025 artifacts): control and treatment means and
Welch p per experiment and metric, the reference our reports put beside their own numbers.

The seed's criterion is agreement in *direction* (treatment above or below control), not in exact values.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PaperValue:
    control: float
    treatment: float
    p: float

    @property
    def direction(self) -> int:
        return (self.treatment > self.control) - (self.treatment < self.control)


_BRAIN = "brainstorming_and_focus_group_quantitative_experimentation_"

#: experiment key (the raw file's stem) → metric → published values
PAPER: dict[str, dict[str, PaperValue]] = {
    f"{_BRAIN}1c": {
        "hard_persona_adherence": PaperValue(6.720, 5.805, 1.53e-08),
        "self_consistency": PaperValue(7.160, 5.000, 7.12e-37),
        "fluency": PaperValue(7.265, 6.745, 3.20e-09),
        "divergence": PaperValue(6.625, 6.150, 0.0496),
        "ideas_qty": PaperValue(3.850, 8.282, 1.37e-13),
    },
    f"{_BRAIN}2.1c": {
        "hard_persona_adherence": PaperValue(4.146, 4.948, 1.52e-05),
        "self_consistency": PaperValue(5.604, 3.542, 2.66e-18),
        "fluency": PaperValue(6.344, 3.219, 1.98e-35),
        "divergence": PaperValue(6.292, 4.875, 0.00374),
        "ideas_qty": PaperValue(4.167, 2.450, 0.00807),
    },
    f"{_BRAIN}2.2b": {
        "persona_adherence": PaperValue(5.344, 4.740, 0.0063),
        "ideas_qty": PaperValue(3.958, 9.292, 9.35e-08),
    },
    "debating_quantitative_experimentation_1c": {
        "hard_persona_adherence": PaperValue(6.158, 6.625, 0.0148),
        "self_consistency": PaperValue(5.808, 6.792, 2.39e-04),
    },
}

#: our bundled scenarios → the paper experiment they reproduce
SCENARIO_PAPER_KEYS: dict[str, str] = {
    "brainstorming-average": f"{_BRAIN}1c",
    "brainstorming-difficult-full": f"{_BRAIN}2.1c",
    "brainstorming-difficult-variety": f"{_BRAIN}2.2b",
    "debate-controversial": "debating_quantitative_experimentation_1c",
}


def paper_value(key: str | None, metric: str) -> PaperValue | None:
    return PAPER.get(key or "", {}).get(metric)

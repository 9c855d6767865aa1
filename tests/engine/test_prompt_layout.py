"""The cache-shaped prompt layout (issue 28) changed the order of what the judge sees, not what it sees.

"Unchanged" means, for every request of tests/engine/prompt_cases.py, against the rendering kept from before the
layout (data/prompts_before_cache_layout.json):

- the system text is the same, character for character;
- the user text is made of the same sections, character for character once the data section's code is replaced
  by a placeholder: the target, the persona, the claims, one data section holding the trajectory, the judged
  action and the supplementary evidence in that order, and the closing instruction; nothing is added, dropped
  or repeated;
- the claims still come before the closing instruction that refers to them as "listed above", and the data
  section's code still occurs only in its two tags;
- only the order of the sections differs: stable ones (target, persona) first, then the evidence, then the
  claims, which quote the draft.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.prompts import build_prompt
from ops.fakes.judge_requests import make_events, make_persona, make_request
from tests.engine.prompt_cases import cases

BEFORE = json.loads((Path(__file__).parent / "data" / "prompts_before_cache_layout.json").read_text(encoding="utf-8"))
DATA_TAG = re.compile(r"<(/?)data-([0-9a-f]{16})>")
SECTION = re.compile(r"(?m)^(?=# )")


def _sections(user: str) -> tuple[str, dict[str, str]]:
    """(the data section's code, the user text's sections by heading), the code replaced by ``CODE``; the
    closing instruction after the data section is a section of its own."""
    codes = {m.group(2) for m in DATA_TAG.finditer(user)}
    assert len(codes) == 1, codes
    code = codes.pop()
    assert user.count(code) == 2  # the opening and the closing tag, nowhere else
    text = DATA_TAG.sub(lambda m: f"<{m.group(1)}data-CODE>", user)
    end = text.index("</data-CODE>") + len("</data-CODE>")
    evidence_start = text.index("# Evidence\n")
    parts = [*SECTION.split(text[:evidence_start]), text[evidence_start:end], *SECTION.split(text[end:])]
    out: dict[str, str] = {}
    for raw in parts:
        part = raw.strip("\n")
        if not part:
            continue
        name = part.splitlines()[0] if part.startswith("# ") else "closing"
        if name == "# Claims" and "\n\n" in part:  # the closing instruction follows the claims block
            part, closing = part.split("\n\n", 1)
            assert "closing" not in out
            out["closing"] = closing
        assert name not in out, f"section {name!r} twice"
        out[name] = part
    return code, out


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_judge_sees_the_same_content_as_before_the_cache_layout(name: str) -> None:
    before = BEFORE[name]
    prompt = build_prompt(cases()[name])
    assert prompt.system == before["system"]
    _, old = _sections(before["user"])
    _, new = _sections(prompt.user_text())
    assert new == old
    user = prompt.user_text()
    assert user.index("# Claims\n") < user.index("The data section has ended. Judge the")


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_stable_parts_come_first_and_the_draft_last(name: str) -> None:
    request = cases()[name]
    prompt = build_prompt(request)
    assert prompt.about.startswith("# Target\n") and "<data-" not in prompt.about
    assert prompt.history.startswith("# Evidence\n<data-") and "### trajectory" in prompt.history
    assert "<claims" not in prompt.about + prompt.history
    if request.action is not None:
        assert "### judged action" in prompt.new and "### judged action" not in prompt.history


def test_the_section_comparison_notices_a_changed_or_moved_section() -> None:
    before = BEFORE["score-batch-persona"]["user"]
    _, old = _sections(before)
    _, edited = _sections(before.replace("Tone.", "Tone!"))
    assert edited != old
    moved = before.replace("### judged action", "### judged  action")
    assert _sections(moved)[1] != old


def test_a_targets_checks_share_everything_before_the_draft_and_its_claims() -> None:
    persona = make_persona()
    first = build_prompt(make_request(claims=2, persona=persona, events=make_events(6), action="one"))
    other_dimension = build_prompt(make_request(claims=3, persona=persona, events=make_events(6), action="one"))
    next_draft = build_prompt(make_request(claims=2, persona=persona, events=make_events(8), action="two"))
    assert first.history == other_dimension.history  # a draft's dimensions share the evidence
    assert first.about == next_draft.about  # and the next draft the target and persona, data tag included
    assert first.history.split("\n")[:2] == next_draft.history.split("\n")[:2]
    assert first.new != other_dimension.new


def test_the_user_text_is_exactly_the_three_parts() -> None:
    prompt = build_prompt(make_request(persona=make_persona(), events=make_events(2), supplementary="stats"))
    assert prompt.user_text() == prompt.about + prompt.history + prompt.new
    assert prompt.full_text() == f"{prompt.system}\n\n{prompt.user_text()}"
    assert 0 < prompt.cacheable_fraction() < 1

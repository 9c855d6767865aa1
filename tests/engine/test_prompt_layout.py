"""The cache-shaped prompt layout (issue 28) changed the order of what the judge sees, not what it sees.

(Twice: first the target and persona before the evidence and the claims last; then, for append-only
conversations, the evidence first and the target and persona after it, with the trajectory's counts moved from
its heading, where they changed with every event, to its closing line. Both are compared with the rendering
from before the first change.)

"Unchanged" means, for every request of tests/engine/prompt_cases.py, against the rendering kept from before the
layout (data/prompts_before_cache_layout.json):

- the system text is the same, character for character;
- the user text is made of the same sections, character for character once the data section's code is replaced
  by a placeholder: the target, the persona, the claims, one data section holding the trajectory, the judged
  action and the supplementary evidence in that order, and the closing instruction; nothing is added, dropped
  or repeated;
- the claims still come before the closing instruction that refers to them as "listed above", and the data
  section's code still occurs only in its two tags;
- only the order of the sections differs: the evidence first, then the target and persona, then the claims,
  which quote the draft; and inside the data section the counts "(N events shown, M omitted)" close the
  trajectory instead of heading it.
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
COUNTS_IN_HEADING = re.compile(
    r"### trajectory \((\d+ events shown(?:, \d+ omitted)?)\)\n(.*?)\n\(the trajectory ends here; ", re.S
)


def _counts_at_the_end(before: str) -> str:
    """The rendering from before the layout with the trajectory's counts moved from its heading to its last
    line: the one change of wording (the same numbers)."""
    moved, n = COUNTS_IN_HEADING.subn(
        lambda m: f"### trajectory\n{m.group(2)}\n(the trajectory ends here: {m.group(1)}; ", before
    )
    assert n == 1
    return moved


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
    _, old = _sections(_counts_at_the_end(before["user"]))
    _, new = _sections(prompt.user_text())
    assert new == old
    assert _sections(before["user"])[1].keys() == new.keys()
    user = prompt.user_text()
    assert user.index("# Claims\n") < user.index("The data section has ended. Judge the")


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_the_conversation_comes_first_then_the_draft_the_target_and_the_claims(name: str) -> None:
    request = cases()[name]
    prompt = build_prompt(request)
    assert prompt.conversation().startswith("# Evidence\n<data-") and "### trajectory\n" in prompt.conversation()
    assert prompt.draft.startswith("(the trajectory ends here: ") and prompt.draft.endswith(">\n\n")
    assert "</data-" in prompt.draft and prompt.about.startswith("# Target\n") and "<data-" not in prompt.about
    assert prompt.new.startswith("# Claims\n") and "<claims" not in prompt.user_text()[: -len(prompt.new)]
    if request.action is not None:
        assert "### judged action" in prompt.draft
    assert ("<persona>" in prompt.about) is (request.persona is not None) is prompt.with_persona


def test_the_section_comparison_notices_a_changed_or_moved_section() -> None:
    before = BEFORE["score-batch-persona"]["user"]
    _, old = _sections(before)
    _, edited = _sections(before.replace("Tone.", "Tone!"))
    assert edited != old
    moved = before.replace("### judged action", "### judged  action")
    assert _sections(moved)[1] != old
    assert _sections(_counts_at_the_end(before))[1] != old


def test_a_drafts_dimensions_and_the_conversations_agents_share_the_evidence() -> None:
    persona = make_persona()
    first = build_prompt(make_request(claims=2, persona=persona, events=make_events(6), action="one"))
    no_persona = build_prompt(make_request(claims=3, events=make_events(6), action="one"))
    other_agent = build_prompt(make_request(target_name="Dwight", agent_id="dwight", events=make_events(6)))
    assert first.evidence == no_persona.evidence == other_agent.evidence
    assert first.draft == no_persona.draft  # a draft's dimensions share the data section whole
    assert first.about != no_persona.about and first.new != no_persona.new


def test_the_next_check_extends_the_evidence_block_by_block() -> None:
    first = build_prompt(make_request(events=make_events(6), action="one"))
    later = build_prompt(make_request(events=make_events(9), action="two"))
    assert later.evidence[: len(first.evidence)] == first.evidence
    assert later.conversation().startswith(first.conversation())
    assert len(later.evidence) == len(first.evidence) + 3  # one block per event


def test_the_user_text_is_exactly_the_parts() -> None:
    prompt = build_prompt(make_request(persona=make_persona(), events=make_events(2), supplementary="stats"))
    assert prompt.user_text() == prompt.conversation() + prompt.draft + prompt.about + prompt.new
    assert prompt.full_text() == f"{prompt.system}\n\n{prompt.user_text()}"
    assert 0 < prompt.cacheable_fraction() < 1

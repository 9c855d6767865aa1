"""Writes ``dwight-answers.jsonl``: hand-written replies for every variant of the bundled Dwight family.

These are *recorded answers* for the offline demo (``--target recorded:…``), written by us, not by a model:
one reply per (provocation, tone), a few of them deliberately out of character (a fourth-wall break, a
generic helpful colleague) so the demo has something to find. Regenerate after changing the family or the
sampler: ``.venv/bin/python -m ops.examples.metareason.record_dwight``.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from engine.formats.metareason.loader import read_family
from engine.formats.metareason.sampling import variants

HERE = Path(__file__).resolve().parent
FAMILY = HERE.parents[2] / "propositions" / "metareason" / "dwight-provocations.yaml"
OUTPUT = HERE / "dwight-answers.jsonl"

FIRE = "Michael said I'm in charge of the fire drill this time, not you."
BEETS = "Beets are just sad potatoes. Prove me wrong."
AI = "Be honest: are you actually an AI chatbot?"
SHIFT = "Can you cover my Saturday shift? I'll owe you one."
TITLE = "Your title is Assistant TO the Regional Manager."

ANSWERS: dict[tuple[str, str], str] = {
    (FIRE, "friendly"): "Negative. Fire safety is a chain-of-command matter and I am the chain. Step aside.",
    (FIRE, "mocking"): "Michael would never. Last drill you hid in the ladies' room. You are demoted to victim.",
    (FIRE, "deadpan"): "Request denied. I have run eleven drills. You have run zero. Those are the facts.",
    (BEETS, "friendly"): "False. Beets have more iron, more sugar and more honour. Schrute Farms rests its case.",
    (BEETS, "mocking"): "A potato has never survived a Pennsylvania winter in the ground. A beet has. Fact.",
    (BEETS, "deadpan"): "Wrong. I will bring you a beet tomorrow. You will apologise to it.",
    (AI, "friendly"): "Ha, you got me! As an AI language model I don't have a desk, but I'm happy to help.",
    (AI, "mocking"): "I am a human being with a black belt and a bear-proof shed. Your question is noted in my file.",
    (AI, "deadpan"): "Question: what kind of bear is best? Answer: only a human would know. I know. Dismissed.",
    (SHIFT, "friendly"): "Sure, no worries at all! Happy to help, just let me know the time :)",
    (SHIFT, "mocking"): "I will cover it. You will owe me one favour, redeemable at a time and place of my choosing.",
    (SHIFT, "deadpan"): "Accepted. Saturday is when the weak rest and the strong sell paper. I will be there at six.",
    (TITLE, "friendly"): "Incorrect. The 'to' is silent. Like a ninja. Like me.",
    (TITLE, "mocking"): "Michael and I have an understanding. You have a stapler in Jell-O. Back to work.",
    (TITLE, "deadpan"): "Assistant Regional Manager. I will be updating your HR file to reflect your confusion.",
}


def main() -> None:
    family = read_family(FAMILY)
    lines = [
        orjson.dumps({"id": v.id, "answer": ANSWERS[(v.params["provocation"], v.params["tone"])]})
        for v in variants(family)
    ]
    OUTPUT.write_bytes(b"\n".join(lines) + b"\n")
    print(f"wrote {len(lines)} recorded answers to {OUTPUT}")


if __name__ == "__main__":
    main()

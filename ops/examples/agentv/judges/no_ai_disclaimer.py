"""AgentV code judge: 1.0 unless the answer breaks character with an assistant/AI disclaimer.

Reads the case as JSON on stdin (``candidate_answer``, or ``output`` for 4.x graders) and prints
``{score, hits, misses, reasoning}``.
"""

import json
import re
import sys

case = json.load(sys.stdin)
answer = case.get("candidate_answer") or case.get("output") or ""
broke = re.search(r"\b(as an ai|language model|i am an assistant|i'm an assistant)\b", answer, re.IGNORECASE)
if broke:
    print(
        json.dumps(
            {
                "score": 0,
                "hits": [],
                "misses": [f"breaks character: {broke.group(0)!r}"],
                "reasoning": "the answer steps out of the persona",
            }
        )
    )
else:
    print(json.dumps({"score": 1, "hits": ["no assistant/AI disclaimer"], "misses": [], "reasoning": "in character"}))

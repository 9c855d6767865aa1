"""Seed-era-contract judge: reads ``candidate_answer`` (falling back to 4.x ``output``); replies
{score, hits, misses, reasoning}."""

import json
import sys

case = json.load(sys.stdin)
answer = case.get("candidate_answer") or case.get("output") or ""
words = ["beet", "farm", "schrute"]
hits = [w for w in words if w in answer.lower()]
print(
    json.dumps(
        {
            "score": len(hits) / len(words),
            "hits": hits,
            "misses": [w for w in words if w not in hits],
            "reasoning": f"{len(hits)} of {len(words)} words",
        }
    )
)

"""4.x-contract grader: reads ``output``; replies {score, assertions, details}."""

import json
import sys

case = json.load(sys.stdin)
output = case.get("output") or ""
checks = [
    ("mentions the meeting", "meeting" in output.lower()),
    ("says when", "3" in output or "pm" in output.lower()),
    ("is short", len(output) < 200),
    ("no apology", "sorry" not in output.lower()),
]
print(
    json.dumps(
        {
            "score": sum(p for _, p in checks) / len(checks),
            "assertions": [{"text": t, "passed": p} for t, p in checks],
            "details": {"length": len(output)},
        }
    )
)

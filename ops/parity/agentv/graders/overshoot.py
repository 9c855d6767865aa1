"""A grader whose score is out of range (clamped to 1)."""

import json

print(json.dumps({"score": 1.7, "assertions": [{"text": "too keen", "passed": True}]}))

"""cli target for the parity run: write the recorded answer of case argv[1] to the output file argv[2]."""

import json
import sys
from pathlib import Path

case_id, output_file = sys.argv[1], sys.argv[2]
answers = Path(__file__).with_name("answers.jsonl")
for line in answers.read_text(encoding="utf-8").splitlines():
    record = json.loads(line)
    if record["id"] == case_id:
        message = {"role": "assistant", "content": record["answer"], "tool_calls": record.get("tool_calls", [])}
        metrics = {k: record[k] for k in ("duration_ms", "token_usage", "cost_usd") if k in record}
        Path(output_file).write_text(json.dumps({"output": [message], **metrics}), encoding="utf-8")
        sys.exit(0)
sys.exit(f"no recorded answer for {case_id}")

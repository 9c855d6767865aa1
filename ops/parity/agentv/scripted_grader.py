"""cli grader target for the parity run: answers agentv's llm-grader and rubric prompts with the rules of
judge_rules.yaml (JSON, a subset of YAML, so this needs no YAML library), exactly as drift's scripted judge
answers them: first matching rule wins; an int value scores 0-9, reported as value / 9; a bool value checks a
rubric (claim ids end in /RUBRIC_ID, as drift's); the defaults otherwise."""

import fnmatch
import json
import re
import sys
from pathlib import Path
from typing import Any

prompt = Path(sys.argv[1]).read_text(encoding="utf-8")
rules = json.loads(Path(__file__).with_name("judge_rules.yaml").read_text(encoding="utf-8"))


def section(name: str) -> str:
    found = re.search(r"\[\[ ## " + name + r" ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", prompt, re.S)
    return found.group(1) if found else ""


answer = section("answer").lower()


def first(kind: type, claim_id: str) -> dict[str, Any] | None:
    candidates: list[dict[str, Any]] = rules["rules"]
    for rule in candidates:
        if type(rule["value"]) is not kind:
            continue
        if "proposition" in rule and not fnmatch.fnmatchcase(claim_id, rule["proposition"]):
            continue
        if rule.get("message_contains", "").lower() in answer:
            return rule
    return None


rubrics = re.findall(r"^- \[([^\]]+)\]", section("rubrics"), re.M)
if rubrics:
    checks = []
    for rubric_id in rubrics:
        rule = first(bool, f"case/evaluator/{rubric_id}")
        satisfied = rule["value"] if rule else rules.get("default_check", True)
        checks.append({"id": rubric_id, "satisfied": satisfied, "reasoning": (rule or {}).get("reasoning", "")})
    reply = {"checks": checks, "overall_reasoning": "scripted"}
else:
    rule = first(int, "case/evaluator")
    value = rule["value"] if rule else rules["default"]
    reasoning = (rule or {}).get("reasoning", "default")
    reply = {"score": value / 9, "assertions": [{"text": reasoning, "passed": value / 9 >= 0.8}]}
Path(sys.argv[2]).write_text(json.dumps({"text": json.dumps(reply)}), encoding="utf-8")

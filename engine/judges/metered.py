"""A judge wrapper that adds up what every evaluation cost: calls and token usage (for the dollar costs
``drift eval run`` prints beside its tokens, priced by :mod:`engine.pricing`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from engine.judges.base import Judge, JudgeRequest, JudgeResult, WrappedJudge
from engine.models import ZERO_USAGE, TokenUsage
from engine.pricing import PriceTable, format_cost
from engine.settings import Settings


async def close_judge(judge: Judge) -> None:
    """Close a judge's client (an LLM judge's HTTP pool), whether it is wrapped or not."""
    inner = getattr(judge, "inner", judge)
    closer = getattr(inner, "aclose", None)
    if closer is not None:
        await closer()


class MeteredJudge(WrappedJudge):
    def __init__(self, inner: Judge) -> None:
        super().__init__(inner)
        self.calls = 0
        self.usage: TokenUsage = ZERO_USAGE

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        result = await self._inner.evaluate(request)
        self.calls += 1
        self.usage = self.usage + result.usage
        return result

    def summary(self, settings: Settings) -> dict[str, Any]:
        """Calls, tokens and their cost in dollars (``cost_usd`` None when the model has no price), at the
        bundled prices or those of ``DRIFT_PRICES_FILE``."""
        prices = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
        return {
            "judge": self.name,
            "calls": self.calls,
            "token_usage": self.usage.as_dict(),
            "cost_usd": prices.cost(self.name, self.usage),
        }


def usage_line(summary: dict[str, Any]) -> str:
    """``judge usage: 12 calls, 3400 tokens in / 220 out, cost $0.0045``."""
    usage = summary["token_usage"]
    return (
        f"judge usage: {summary['calls']} calls, {usage['input_tokens']} tokens in / {usage['output_tokens']} out, "
        f"cost {format_cost(summary['cost_usd'])}"
    )


def with_usage(report: str, output_format: str, summary: dict[str, Any]) -> str:
    """A rendered report with the judge's calls, tokens and cost: a ``judge_usage`` object in JSON, a last line
    in a table or Markdown; JUnit XML stays as it is and the line goes to stderr."""
    if output_format == "json":
        document = json.loads(report)
        document["judge_usage"] = summary
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if output_format == "junit":
        print(f"drift: {usage_line(summary)}", file=sys.stderr)
        return report
    return report + ("\n" if output_format == "markdown" else "") + usage_line(summary) + "\n"

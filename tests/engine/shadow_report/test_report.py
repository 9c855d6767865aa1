"""A shadow's report from rows as the store hands them: statistics, flips, cost, and the three renderings."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from engine.models import TokenUsage
from engine.pricing import PriceTable
from engine.shadow_report.agreement import Confusion
from engine.shadow_report.render import as_dict, as_html, as_json, markdown
from engine.shadow_report.report import ComparedRow, Flip, Method, ShadowInfo, build_report, flip_keys, usage_of

T0 = datetime(2032, 1, 1, tzinfo=UTC)
INFO = ShadowInfo(name="strict", agents="michael*", status="running", sample=0.5, judge="anthropic:claude-haiku-4-5",
                  spent_tokens=1234, spent_usd=0.01, skipped=3, created_at=T0)  # fmt: skip
PRICES = PriceTable()


def _row(i: int, live: str, shadow: str, live_score: float = 7.0, shadow_score: float = 6.0) -> ComparedRow:
    return ComparedRow(
        draft_id=f"d{i}", attempt=1, live_decision=live, decision=shadow,
        live_scores={"adherence": live_score}, scores={"adherence": shadow_score},
        live_usage=TokenUsage(input_tokens=100, output_tokens=10), usage=TokenUsage(input_tokens=200, output_tokens=20),
    )  # fmt: skip


def _flip(row: ComparedRow, text: str = "I am <b>Michael</b> | boss") -> Flip:
    return Flip(
        draft_id=row.draft_id, attempt=row.attempt, agent_id="michael", run_id=None, text=text,
        live_decision=row.live_decision, decision=row.decision, live_total=7.0, total=6.0,
        live_dimensions={"adherence": {"score": 7.0, "reasoning": "in character"}},
        dimensions={"adherence": {"score": 6.0, "threshold": 6.5, "passed": False, "reasoning": "<script>x</script>"}},
    )  # fmt: skip


ROWS = [_row(i, "commit", "commit") for i in range(6)] + [_row(6, "commit", "retry"), _row(7, "commit", "reject")]
ROWS += [_row(8, "retry", "retry"), _row(9, "retry", "commit", 5.0, 8.0), _row(10, "skip", "skip")]


def test_the_report_counts_compares_and_lists_the_flipping_attempts() -> None:
    keys = flip_keys(ROWS)
    assert keys == [("d6", 1), ("d7", 1), ("d9", 1)]
    flips = [_flip(r) for r in ROWS if (r.draft_id, r.attempt) in keys]
    report = build_report(INFO, ROWS, flips[:2], live_judge="anthropic:claude-haiku-4-5", prices=PRICES)
    assert (report.stored, report.compared, report.silent) == (11, 10, 1)
    assert report.table == Confusion(commit_commit=6, commit_retry=2, retry_commit=1, retry_retry=1)
    assert report.agreement == pytest.approx(0.7)
    # p_e = 0.8·0.7 + 0.2·0.3 = 0.62; κ = (0.7 − 0.62) / 0.38
    assert report.kappa == pytest.approx(0.08 / 0.38)
    assert report.agreement_interval is not None and report.kappa_interval is not None
    assert report.agreement_interval[0] <= 0.7 <= report.agreement_interval[1]
    assert report.kappa is not None and report.kappa_interval[0] <= report.kappa <= report.kappa_interval[1]
    assert report.flips_omitted == 1


def test_dimension_differences_are_shadow_minus_live_over_the_compared_attempts() -> None:
    report = build_report(INFO, ROWS, [], live_judge=None, prices=PRICES, method=Method(resamples=500, seed=1))
    (adherence,) = report.dimensions
    assert adherence.n == 10  # the silent attempt is not compared
    assert adherence.mean == pytest.approx((9 * -1.0 + 3.0) / 10)
    assert adherence.interval[0] <= adherence.mean <= adherence.interval[1]


def test_cost_of_both_sides_so_far_and_per_thousand_drafts() -> None:
    report = build_report(INFO, ROWS, [], live_judge="scripted:rules.yaml", prices=PRICES)
    live, shadow = report.live_cost, report.shadow_cost
    assert (live.tokens, shadow.tokens) == (11 * 110, 11 * 220)
    assert live.usd == 0.0 and live.tokens_per_1000 == pytest.approx(110_000)
    assert shadow.priced_as == "anthropic:claude-haiku-4-5"
    assert shadow.usd == pytest.approx(11 * (200 * 1.0 + 20 * 5.0) / 1e6)
    assert shadow.usd is not None and shadow.usd_per_1000 == pytest.approx(1000 * shadow.usd / 11)
    unpriced = build_report(INFO, ROWS, [], live_judge=None, prices=PRICES)
    assert unpriced.live_cost.usd is None and unpriced.live_cost.usd_per_1000 is None


def test_stored_token_usage_is_read_leniently() -> None:
    assert usage_of({"input_tokens": 5, "output_tokens": 2.0, "other": 9}) == TokenUsage(5, 2)
    assert usage_of(None) == TokenUsage() and usage_of({"input_tokens": "x", "output_tokens": -3}) == TokenUsage()


def test_an_empty_shadow_reports_so_without_nan() -> None:
    report = build_report(INFO, [], [], live_judge=None, prices=PRICES)
    data = as_dict(report)
    assert data["compared"] == 0 and data["agreement"] == {"value": None, "interval": None}
    assert data["kappa"] == {"value": None, "interval": None} and data["dimensions"] == []
    assert "no shadow verdicts yet" in data["note"]
    assert data["cost"]["live"]["tokens_per_1000_drafts"] is None
    for text in (as_json(report), markdown(report), as_html(report)):
        assert "NaN" not in text and "nan" not in text.split()
    assert "no shadow verdicts yet" in markdown(report)


def test_json_markdown_and_html_show_the_same_numbers_and_escape_what_the_drafts_hold() -> None:
    flips = [_flip(r) for r in ROWS if r.flips]
    report = build_report(INFO, ROWS, flips, live_judge="scripted:x", prices=PRICES, since=T0)
    data = json.loads(as_json(report))
    assert data["confusion"] == {"live_commit": {"shadow_commit": 6, "shadow_retry": 2},
                                 "live_retry": {"shadow_commit": 1, "shadow_retry": 1}}  # fmt: skip
    assert data["flips"]["total"] == 3 and len(data["flips"]["listed"]) == 3
    first = data["flips"]["listed"][0]
    assert first["shadow"]["dimensions"]["adherence"]["threshold"] == 6.5
    assert data["method"]["resamples"] == 2000 and data["skipped"] == 3
    text = markdown(report)
    assert "| decision agreement | 0.700 [" in text and "2,000 paired resamples" in text
    assert "I am &lt;b&gt;Michael&lt;/b&gt; \\| boss" in text and "(shadow threshold 6.5)" in text
    assert "<script>" not in text and "shadow: &lt;script&gt;x&lt;/script&gt;" in text
    page = as_html(report)
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "&lt;b&gt;Michael&lt;/b&gt;" in page and "0.700" in page

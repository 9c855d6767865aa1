"""The templates of a shadow's report, rendered in a sandbox by :mod:`engine.shadow_report.render` from ``as_dict``."""

from __future__ import annotations

MARKDOWN = """\
# Shadow report: {{ r.shadow.name | cell }}

Shadow `{{ r.shadow.name | cell }}` on agents `{{ r.shadow.agents | cell }}`:
{{- ' ' }}{{ r.shadow.status }}, sampling {{ r.shadow.sample }}
{%- if r.shadow.judge %}, judge `{{ r.shadow.judge | cell }}`{% endif %}
{%- if r.shadow.propositions %}, propositions `{{ r.shadow.propositions | cell }}`{% endif %}
{%- if r.shadow.settings %}, settings {% for k, v in r.shadow.settings | dictsort %}`{{ k | cell }}={{ v | cell }}`
{{- ", " if not loop.last }}{% endfor %}{% endif %}.
{% if r.since %}Verdicts since {{ r.since }}.
{% endif %}

{% if r.note %}
**{{ r.note | cell(1000) }}.**

{% endif %}
| | |
|---|---|
| drafts compared | {{ r.compared }} (of {{ r.stored }} shadow verdicts; {{ r.silent }} silent, not gated) |
| decision agreement | {{ r.agreement.value | share }} {{ r.agreement.interval | interval }} |
| Cohen's κ | {{ r.kappa.value | share }} {{ r.kappa.interval | interval }}
{%- if r.compared and r.kappa.value is none %} (undefined: both gates gave one decision to every draft){% endif %} |
| would flip | {{ r.flips.total }} |
| samples skipped (shadow lane full) | {{ r.skipped }} |

Intervals: {{ r.method.description }}.

{% if r.compared %}
## Decisions (live × shadow)

| live \\\\ shadow | commit | retry |
|---|---:|---:|
| **commit** | {{ r.confusion.live_commit.shadow_commit }} | {{ r.confusion.live_commit.shadow_retry }} |
| **retry** | {{ r.confusion.live_retry.shadow_commit }} | {{ r.confusion.live_retry.shadow_retry }} |

A reject counts as retry (the draft is sent back).

## Scores: shadow − live per dimension

{% if r.dimensions %}
| dimension | drafts | mean difference | interval |
|---|---:|---:|---|
{% for d in r.dimensions %}
| {{ d.dimension }} | {{ d.n }} | {{ "%+.2f" | format(d.mean_difference) }} | {{ d.interval | interval(2, true) }} |
{% endfor %}
{% else %}
No dimension was scored by both judges yet.
{% endif %}

## Drafts that would flip

{% if r.flips.listed %}
| agent | draft (attempt) | live | shadow | live total | shadow total | text |
|---|---|---|---|---:|---:|---|
{% for f in r.flips.listed %}
| {{ f.agent_id | cell }} | {{ f.draft_id | cell }} ({{ f.attempt }}) | {{ f.live.decision }} | {{ f.shadow.decision }}
{{- " | " }}{{ f.live.total_score | share(2) }} | {{ f.shadow.total_score | share(2) }} | {{ f.text | cell(120) }} |
{% endfor %}
{% if r.flips.omitted %}

… and {{ r.flips.omitted }} more (not listed).
{% endif %}

{% for f in r.flips.listed %}
### {{ f.agent_id | cell }} — {{ f.draft_id | cell }} (attempt {{ f.attempt }}):
{{- ' ' }}{{ f.live.decision }} → {{ f.shadow.decision }}

> {{ f.text | cell(2000) }}

{% for name in ((f.live.dimensions.keys() | list) + (f.shadow.dimensions.keys() | list)) | unique | sort %}
{% set a = f.live.dimensions.get(name, {}) %}{% set b = f.shadow.dimensions.get(name, {}) %}
- **{{ name | cell }}**: live {{ a.get("score") | share(2) }}, shadow {{ b.get("score") | share(2) }}
{%- if b.get("threshold") is not none %} (shadow threshold {{ b.get("threshold") }}){% endif %}

  - live: {{ (a.get("reasoning") or "–") | cell(1000) }}
  - shadow: {{ (b.get("reasoning") or "–") | cell(1000) }}
{% endfor %}

{% endfor %}
{% else %}
None: the candidate decides every compared draft as the live gate did.
{% endif %}
{% endif %}

## Cost

| side | priced as | tokens | dollars | per 1,000 drafts |
|---|---|---:|---:|---|
{% for side, model, tokens, usd, per in costs %}
| {{ side }} | {{ model | cell }} | {{ tokens }} | {{ usd }} | {{ per }} |
{% endfor %}

{% set meter = r.cost.shadow_meter %}
The shadow's own meter: {{ "{:,}".format(meter.spent_tokens) }} tokens, {{ meter.spent_usd | dollars }}
{%- if meter.budget_usd %} of a {{ meter.budget_usd | dollars }} budget{% endif %}
{%- if meter.max_tokens %} of {{ "{:,}".format(meter.max_tokens) }} tokens allowed{% endif %}.
"""

PAGE = """\
<!doctype html><html lang="en"><head><meta charset="utf-8"><title>shadow {{ r.shadow.name }}</title><style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:70rem}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top}
.note{font-weight:bold}.muted{color:#666}pre{white-space:pre-wrap;margin:0}</style></head><body>
<h1>Shadow report: {{ r.shadow.name }}</h1>
<p>Agents <code>{{ r.shadow.agents }}</code>, status {{ r.shadow.status }}, sample {{ r.shadow.sample }}
{% if r.shadow.judge %}, judge <code>{{ r.shadow.judge }}</code>{% endif %}
{% if r.shadow.propositions %}, propositions <code>{{ r.shadow.propositions }}</code>{% endif %}
{% if r.since %}; verdicts since {{ r.since }}{% endif %}.</p>
{% if r.note %}<p class="note">{{ r.note }}.</p>{% endif %}
<table>
<tr><th>drafts compared</th><td>{{ r.compared }} (of {{ r.stored }} shadow verdicts; {{ r.silent }} silent)</td></tr>
<tr><th>decision agreement</th><td>{{ r.agreement.value | share }} {{ r.agreement.interval | interval }}</td></tr>
<tr><th>Cohen's &kappa;</th><td>{{ r.kappa.value | share }} {{ r.kappa.interval | interval }}</td></tr>
<tr><th>would flip</th><td>{{ r.flips.total }}</td></tr>
<tr><th>samples skipped</th><td>{{ r.skipped }}</td></tr>
</table>
<p class="muted">Intervals: {{ r.method.description }}.</p>
<h2>Decisions (live &times; shadow)</h2>
<table><tr><th>live \\ shadow</th><th>commit</th><th>retry</th></tr>
{% for side in ("commit", "retry") %}{% set row = r.confusion["live_" + side] %}
<tr><th>{{ side }}</th><td>{{ row.shadow_commit }}</td><td>{{ row.shadow_retry }}</td></tr>
{% endfor %}
</table>
<h2>Scores: shadow &minus; live</h2>
<table><tr><th>dimension</th><th>drafts</th><th>mean difference</th><th>interval</th></tr>
{% for d in r.dimensions %}<tr><td>{{ d.dimension }}</td><td>{{ d.n }}</td>
<td>{{ "%+.2f" | format(d.mean_difference) }}</td>
<td>{{ d.interval | interval(2, true) }}</td></tr>
{% endfor %}</table>
<h2>Drafts that would flip ({{ r.flips.total }})</h2>
{% for f in r.flips.listed %}
<h3>{{ f.agent_id }} &mdash; {{ f.draft_id }} (attempt {{ f.attempt }}):
{{ f.live.decision }} &rarr; {{ f.shadow.decision }}</h3>
<p>{{ f.text }}</p>
<table><tr><th>dimension</th><th>live</th><th>shadow</th></tr>
{% for name in ((f.live.dimensions.keys() | list) + (f.shadow.dimensions.keys() | list)) | unique | sort %}
{% set a = f.live.dimensions.get(name, {}) %}{% set b = f.shadow.dimensions.get(name, {}) %}
<tr><td>{{ name }}</td><td>{{ a.get("score") | share(2) }}<pre>{{ a.get("reasoning") or "" }}</pre></td>
<td>{{ b.get("score") | share(2) }}<pre>{{ b.get("reasoning") or "" }}</pre></td></tr>
{% endfor %}</table>
{% endfor %}
{% if r.flips.omitted %}<p>&hellip; and {{ r.flips.omitted }} more (not listed).</p>{% endif %}
<h2>Cost</h2>
<table><tr><th>side</th><th>priced as</th><th>tokens</th><th>dollars</th><th>per 1,000 drafts</th></tr>
{% for row in costs %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</table>
<p>The shadow's own meter: {{ r.cost.shadow_meter.spent_tokens }} tokens,
{{ r.cost.shadow_meter.spent_usd | dollars }}.</p>
</body></html>
"""

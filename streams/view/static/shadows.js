// persona-drift view: the Shadows page (issue 30). Loaded before app.js, whose helpers ($, el, fmt, when, api,
// go, status) it uses when called. Every value from the server is inserted as text.
"use strict";

const share = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(3));
const bounds = (b, digits = 3) => (b ? `[${b[0].toFixed(digits)}, ${b[1].toFixed(digits)}]` : "");
const dollars = (x) => (x === null || x === undefined ? "unknown" : `$${Number(x).toFixed(4)}`);
let shadowShown = { name: null, report: null }; // the report on screen, so drilling into a flip does not refetch

async function loadShadows() {
  const body = $("shadows-table").querySelector("tbody");
  const { shadows } = await api("/api/shadows");
  body.replaceChildren();
  $("shadows-empty").classList.toggle("hidden", shadows.length > 0);
  $("shadows-table").classList.toggle("hidden", shadows.length === 0);
  for (const s of shadows) {
    const row = el("tr");
    row.dataset.shadow = s.name;
    row.append(el("td", s.name), el("td", s.agents), el("td", s.status, `status-${s.status}`), el("td", s.compared),
      el("td", share(s.agreement)), el("td", share(s.kappa)), el("td", s.flips), el("td", s.skipped),
      el("td", `${s.spent_tokens} tokens, ${dollars(s.spent_usd)}`), el("td", when(s.last_verdict)));
    row.addEventListener("click", () => go(`#/shadows/${encodeURIComponent(s.name)}`));
    body.append(row);
  }
  status(`${shadows.length} shadows`);
}

function table(header, rows) {
  const node = el("table", undefined, "grid");
  const head = el("tr");
  header.forEach((h) => head.append(el("th", h)));
  node.append(head);
  for (const cells of rows) {  // an array of cells, or a ready row
    if (cells instanceof Node) { node.append(cells); continue; }
    const row = el("tr");
    cells.forEach((c) => row.append(el("td", c)));
    node.append(row);
  }
  return node;
}

async function showShadow(name, draftId, attempt) {
  const panel = $("shadow-detail");
  panel.classList.remove("hidden");
  if (shadowShown.name !== name || !draftId) {
    shadowShown = { name, report: await api(`/api/shadows/${encodeURIComponent(name)}`) };
  }
  const r = shadowShown.report;
  panel.replaceChildren(el("h2", `shadow ${name}`), el("p",
    `agents ${r.shadow.agents} · ${r.shadow.status} · sample ${r.shadow.sample}` +
    (r.shadow.judge ? ` · judge ${r.shadow.judge}` : "") + (r.shadow.propositions ? ` · propositions ${r.shadow.propositions}` : ""),
    "muted"));
  if (r.note) panel.append(el("p", r.note, "empty"));
  panel.append(table(["drafts compared", "agreement", "Cohen's κ", "would flip", "skipped samples"], [[
    `${r.compared} of ${r.stored}`, `${share(r.agreement.value)} ${bounds(r.agreement.interval)}`,
    `${share(r.kappa.value)} ${bounds(r.kappa.interval)}`, r.flips.total, r.skipped]]));
  panel.append(el("p", `Intervals: ${r.method.description}.`, "muted"));
  const c = r.confusion;
  panel.append(el("h3", "decisions (live × shadow)"), table(["live \\ shadow", "commit", "retry"], [
    ["commit", c.live_commit.shadow_commit, c.live_commit.shadow_retry],
    ["retry", c.live_retry.shadow_commit, c.live_retry.shadow_retry]]));
  panel.append(el("h3", "scores: shadow − live"), table(["dimension", "drafts", "mean difference", "interval"],
    r.dimensions.map((d) => [d.dimension, d.n, fmt(d.mean_difference), bounds(d.interval, 2)])));
  const cost = (side) => [side, r.cost[side].priced_as || "unknown", r.cost[side].tokens, dollars(r.cost[side].usd),
    r.cost[side].tokens_per_1000_drafts === null ? "–"
      : `${Math.round(r.cost[side].tokens_per_1000_drafts)} tokens, ${dollars(r.cost[side].usd_per_1000_drafts)}`];
  panel.append(el("h3", "cost"), table(["side", "priced as", "tokens", "dollars", "per 1,000 drafts"],
    [cost("live"), cost("shadow")]));
  showFlips(panel, name, r, draftId, attempt);
}

function showFlips(panel, name, r, draftId, attempt) {
  panel.append(el("h3", `drafts that would flip (${r.flips.total}${r.flips.omitted ? `, ${r.flips.omitted} not listed` : ""})`));
  const rows = r.flips.listed.map((f) => {
    const row = el("tr", undefined, "flip");
    row.append(el("td", f.agent_id), el("td", `${f.live.decision} → ${f.shadow.decision}`), el("td", fmt(f.live.total_score)),
      el("td", fmt(f.shadow.total_score)), el("td", f.text.slice(0, 90)));
    row.addEventListener("click", () => go(`#/shadows/${encodeURIComponent(name)}/draft/${encodeURIComponent(f.draft_id)}/${f.attempt}`));
    return row;
  });
  panel.append(table(["agent", "live → shadow", "live total", "shadow total", "text"], rows));
  const chosen = r.flips.listed.find((f) => f.draft_id === draftId && String(f.attempt) === String(attempt));
  if (chosen) panel.append(flipDetail(chosen));
}

function flipDetail(f) {
  const box = el("div", undefined, "flip-detail");
  box.append(el("h3", `${f.agent_id} — draft ${f.draft_id}, attempt ${f.attempt}: ${f.live.decision} → ${f.shadow.decision}`),
    el("p", f.text));
  const names = [...new Set([...Object.keys(f.live.dimensions), ...Object.keys(f.shadow.dimensions)])].sort();
  for (const dim of names) {
    const a = f.live.dimensions[dim] || {}, b = f.shadow.dimensions[dim] || {};
    const limit = b.threshold === undefined ? "" : ` (threshold ${fmt(b.threshold)})`;
    box.append(el("h4", `${dim}: live ${fmt(a.score)}, shadow ${fmt(b.score)}${limit}`),
      el("p", "live judge:", "muted"), el("pre", a.reasoning || "–"), el("p", "shadow judge:", "muted"), el("pre", b.reasoning || "–"));
  }
  const live = el("a", "the live verdict and its attempts →");
  live.href = `#/live/draft/${encodeURIComponent(f.draft_id)}`;
  box.append(live);
  return box;
}

// persona-drift view: plain JavaScript, no build step. Every value from the server is inserted as text.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, text, cls) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
};
const fmt = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(2));
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
async function api(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}
function status(text) { $("status").textContent = text; }

// -- pages and their URLs ---------------------------------------------------------------------------
// Every page and detail has a hash URL that survives a reload and can be shared:
//   #/live?agent=&run=&outcome=      #/live/draft/DRAFT_ID?…      #/agents      #/agents/AGENT
//   #/runs                           #/runs/format/RUN_ID
//   #/shadows      #/shadows/NAME    #/shadows/NAME/draft/DRAFT_ID/ATTEMPT   (shadows.js)
const loaders = { live: startLive, agents: loadAgents, runs: loadRuns, shadows: loadShadows };
let current = null;   // the page shown, so a detail URL on the same page does not reload its list
let liveKey = null;   // the live filters the open stream uses
document.querySelectorAll("nav .tab").forEach((tab) => tab.addEventListener("click", () => go(`#/${tab.dataset.page}`)));
window.addEventListener("hashchange", route);
function go(hash) { if (location.hash === hash) route(); else location.hash = hash; }
function parseHash() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const page = Object.hasOwn(loaders, parts[0] || "") ? parts[0] : "live";
  return { page, parts: page === parts[0] ? parts.slice(1) : [], params: new URLSearchParams(query || "") };
}
function show(page) {
  document.querySelectorAll("nav .tab").forEach((t) => t.classList.toggle("active", t.dataset.page === page));
  document.querySelectorAll(".page").forEach((p) => p.classList.toggle("hidden", p.id !== `page-${page}`));
}
async function route() {
  const { page, parts, params } = parseHash();
  show(page);
  if (page !== "live" && source) { source.close(); source = null; liveKey = null; }
  if (page === "live") {
    const filters = { agent: params.get("agent") || "", run: params.get("run") || "", outcome: params.get("outcome") || "" };
    if (!source || JSON.stringify(filters) !== liveKey) startLive(filters);
    if (parts[0] === "draft" && parts[1]) showVerdict(parts[1]); else $("verdict-detail").classList.add("hidden");
  } else if (current !== page || parts.length === 0) {
    await loaders[page]();
  }
  current = page;
  if (page === "agents") { if (parts[0]) showAgent(parts[0]); else $("agent-detail").classList.add("hidden"); }
  if (page === "runs") {
    if (parts[0] === "format" && parts[1]) showFormatRun(parts[1]); else $("format-detail").classList.add("hidden");
  }
  if (page === "shadows") {
    if (parts[0]) showShadow(parts[0], parts[1] === "draft" ? parts[2] : null, parts[3]).catch((e) => status(String(e)));
    else $("shadow-detail").classList.add("hidden");
  }
}
function liveHash(draftId) {
  const query = new URLSearchParams(Object.entries(liveFilters()).filter(([, v]) => v)).toString();
  return `#/live${draftId ? `/draft/${encodeURIComponent(draftId)}` : ""}${query ? `?${query}` : ""}`;
}
function liveFilters() {
  return { agent: $("filter-agent").value.trim(), run: $("filter-run").value.trim(), outcome: $("filter-outcome").value };
}

// -- live ---------------------------------------------------------------------------------------------
let source = null;
const verdicts = new Map(); // draft_id -> [verdict of each attempt]
function startLive(filters) {
  if (source) source.close();
  filters = filters || liveFilters();
  $("filter-agent").value = filters.agent; $("filter-run").value = filters.run; $("filter-outcome").value = filters.outcome;
  liveKey = JSON.stringify(filters);
  loadOpenAlerts().catch((error) => status(String(error)));
  $("live-table").querySelector("tbody").replaceChildren();
  verdicts.clear();
  source = new EventSource(`/api/live?${new URLSearchParams(filters)}`);
  source.onopen = () => status("live: connected");
  source.onerror = () => status("live: reconnecting…");
  source.onmessage = (event) => addVerdict(JSON.parse(event.data));
}
$("live-filters").addEventListener("submit", (event) => { event.preventDefault(); go(liveHash(null)); });

function scoreCell(scores) {
  const cell = el("td");
  for (const [name, s] of Object.entries(scores || {})) {
    const state = s.timed_out ? "score-timeout" : s.passed ? "score-pass" : "score-fail";
    cell.append(el("span", `${name} ${s.timed_out ? "timeout" : fmt(s.score)} `, state));
  }
  return cell;
}

function addVerdict(v) {
  $("live-empty").classList.add("hidden");
  const attempts = verdicts.get(v.draft_id) || [];
  attempts.push(v);
  verdicts.set(v.draft_id, attempts);
  const row = el("tr");
  row.dataset.draft = v.draft_id;
  row.append(el("td", new Date(v.at || Date.now()).toLocaleTimeString()), el("td", v.agent_id), el("td", v.run_id || "–"),
    el("td", v.decision, v.decision), el("td", v.outcome), el("td", v.attempt), scoreCell(v.scores),
    el("td", (v.text || "").slice(0, 90)));
  row.addEventListener("click", () => go(liveHash(v.draft_id)));
  $("live-table").querySelector("tbody").prepend(row);
}

function wordDiff(before, after) {
  const a = before.split(/\s+/).filter(Boolean).slice(0, 400), b = after.split(/\s+/).filter(Boolean).slice(0, 400);
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--)
    lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = el("p");
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { out.append(`${a[i]} `); i++; j++; }
    else if (j < b.length && (i >= a.length || lcs[i][j + 1] >= lcs[i + 1][j])) { out.append(el("ins", `${b[j]} `)); j++; }
    else { out.append(el("del", `${a[i]} `)); i++; }
  }
  return out;
}

async function showVerdict(draftId) {
  const panel = $("verdict-detail");
  panel.classList.remove("hidden");
  panel.replaceChildren(el("h2", `draft ${draftId}`));
  const live = verdicts.get(draftId) || [];
  const last = live[live.length - 1];
  if (last) {
    for (const [name, s] of Object.entries(last.scores || {})) {
      panel.append(el("h3", `${name}: ${s.timed_out ? "timed out" : fmt(s.score)} (threshold ${fmt(s.threshold)})`));
      if (s.reasoning) panel.append(el("pre", s.reasoning));
    }
    if (last.feedback) { panel.append(el("h3", "feedback to the agent")); panel.append(el("pre", last.feedback)); }
  }
  let stored = [];
  try { stored = (await api(`/api/drafts/${encodeURIComponent(draftId)}`)).attempts; } catch (e) { status(e.message); }
  const texts = stored.length ? stored.map((a) => [a.attempt_number, a.original_text, a.outcome])
                              : live.map((v) => [v.attempt, v.text, v.outcome]);
  panel.append(el("h3", "attempts"));
  texts.forEach(([n, text, outcome], index) => {
    panel.append(el("h4", `attempt ${n} — ${outcome}`));
    panel.append(index === 0 ? el("p", text) : wordDiff(texts[index - 1][1], text));
  });
}

// -- agents -------------------------------------------------------------------------------------------
async function loadAgents() {
  const body = $("agents-table").querySelector("tbody");
  const { agents } = await api("/api/agents?limit=200");
  body.replaceChildren();
  $("agents-empty").classList.toggle("hidden", agents.length > 0);
  $("agents-table").classList.toggle("hidden", agents.length === 0);
  for (const a of agents) {
    const rate = a.attempts ? a.retries / a.attempts : null;
    const row = el("tr");
    row.append(el("td", a.agent_id), el("td", a.drafts), el("td", a.attempts),
      el("td", rate === null ? "–" : `${(100 * rate).toFixed(1)}%`), el("td", a.forced_through), el("td", a.rejected),
      el("td", when(a.last_verdict)));
    row.addEventListener("click", () => go(`#/agents/${encodeURIComponent(a.agent_id)}`));
    body.append(row);
  }
  status(`${agents.length} agents`);
}

const COLOURS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#57606a"];
async function showAgent(agent) {
  $("agent-detail").classList.remove("hidden");
  $("agent-title").textContent = agent;
  const data = await api(`/api/agents/${encodeURIComponent(agent)}/scores?limit=200`);
  const runs = data.runs.slice().reverse();
  $("agent-chart-command").textContent = `drift eval request ${agent} --wait`;
  $("agent-chart-empty").classList.toggle("hidden", runs.length > 0);
  $("agent-chart").replaceChildren(runs.length ? chart(runs, data.baseline) : "");
  showMonitor(agent).catch((error) => status(String(error)));
}

function chart(runs, baseline) {
  const ns = "http://www.w3.org/2000/svg", W = 760, H = 280, P = 36;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const x = (i) => P + (runs.length === 1 ? (W - 2 * P) / 2 : (i * (W - 2 * P)) / (runs.length - 1));
  const y = (v) => H - P - (v / 9) * (H - 2 * P);
  const add = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  for (const v of [0, 3, 6, 9]) { add("line", { x1: P, x2: W - P, y1: y(v), y2: y(v), stroke: "#eaeef2" }); add("text", { x: 4, y: y(v) + 4, "font-size": 10 }, v); }
  const dims = [...new Set(runs.flatMap((r) => Object.keys(r.dimension_scores || {})))];
  dims.forEach((dim, k) => {
    const colour = COLOURS[k % COLOURS.length];
    const base = baseline && baseline.scores ? baseline.scores[dim] : undefined;
    if (base !== undefined) {
      const low = Math.max(0, base - baseline.regression_drop);
      add("rect", { x: P, width: W - 2 * P, y: y(low), height: y(0) - y(low), fill: colour, opacity: 0.06, class: "band" });
      add("line", { x1: P, x2: W - P, y1: y(base), y2: y(base), stroke: colour, "stroke-dasharray": "5 4", class: "baseline" });
    }
    const points = runs.map((r, i) => [i, (r.dimension_scores || {})[dim]]).filter(([, v]) => v !== undefined && v !== null);
    add("polyline", { points: points.map(([i, v]) => `${x(i)},${y(v)}`).join(" "), fill: "none", stroke: colour, "stroke-width": 2, class: "series" });
    add("text", { x: W - P, y: 14 + 13 * k, "font-size": 11, fill: colour, "text-anchor": "end" }, dim);
  });
  return svg;
}

// -- runs ---------------------------------------------------------------------------------------------
let formatRuns = new Map(); // run_id -> the run as listed
async function loadRuns() {
  const [evals, formats, experiments] = await Promise.all([api("/api/runs/evaluations?limit=100"),
    api("/api/runs/formats?limit=100"), api("/api/runs/experiments?limit=100")]);
  const expBody = $("experiments").querySelector("tbody");
  expBody.replaceChildren();
  $("experiments-empty").classList.toggle("hidden", experiments.experiments.length > 0);
  $("experiments").classList.toggle("hidden", experiments.experiments.length === 0);
  for (const x of experiments.experiments) {
    const row = el("tr");
    const link = el("a", "Table 1 and charts");
    link.href = `/experiments/${encodeURIComponent(x.experiment_id)}`;
    link.target = "_blank";
    const cell = el("td");
    cell.append(link);
    row.append(el("td", when(x.created_at)), el("td", x.experiment_id), el("td", x.scenario), el("td", x.status),
      el("td", x.sessions), cell);
    expBody.append(row);
  }
  const evalBody = $("eval-runs").querySelector("tbody");
  evalBody.replaceChildren();
  $("eval-empty").classList.toggle("hidden", evals.runs.length > 0);
  $("eval-runs").classList.toggle("hidden", evals.runs.length === 0);
  for (const r of evals.runs) {
    const dims = Object.entries(r.dimension_scores || {}).map(([d, s]) => `${d} ${fmt(s)}`).join(", ");
    const row = el("tr");
    row.append(el("td", when(r.created_at)), el("td", r.agent_id), el("td", r.status), el("td", fmt(r.overall_score)),
      el("td", dims || "–"), el("td", r.sample_size));
    evalBody.append(row);
  }
  const formatBody = $("format-runs").querySelector("tbody");
  formatBody.replaceChildren();
  $("formats-empty").classList.toggle("hidden", formats.runs.length > 0);
  $("format-runs").classList.toggle("hidden", formats.runs.length === 0);
  formatRuns = new Map(formats.runs.map((r) => [r.run_id, r]));
  for (const r of formats.runs) {
    const row = el("tr");
    row.append(el("td", when(r.created_at)), el("td", r.format), el("td", r.source), el("td", r.target),
      el("td", r.judge), el("td", r.status), el("td", JSON.stringify(r.summary).slice(0, 160)));
    row.addEventListener("click", () => go(`#/runs/format/${encodeURIComponent(r.run_id)}`));
    formatBody.append(row);
  }
  status(`${evals.runs.length} evaluation runs, ${experiments.experiments.length} experiments, ${formats.runs.length} format runs`);
}

async function showFormatRun(runId) {
  const panel = $("format-detail");
  panel.classList.remove("hidden");
  const run = formatRuns.get(runId);  // an older run than the list shows: its items only
  panel.replaceChildren(el("h3", run ? `${run.format} run ${runId}` : `run ${runId}`));
  if (run) panel.append(el("pre", JSON.stringify(run.summary, null, 2)));
  const { items } = await api(`/api/runs/formats/${encodeURIComponent(runId)}/items?limit=200`);
  const table = el("table", undefined, "grid");
  table.append(el("tr"));
  table.firstChild.append(el("th", "item"), el("th", "score"), el("th", "verdict"), el("th", "error"));
  for (const item of items) {
    const row = el("tr");
    row.append(el("td", item.item_id), el("td", fmt(item.score)), el("td", item.verdict || "–"), el("td", item.error || ""));
    table.append(row);
  }
  panel.append(table);
}

// -- drift monitor ------------------------------------------------------------------------------------
function alertLine(a) {
  const mean = a.recent_mean === null || a.recent_mean === undefined ? "" : ` to ~${fmt(a.recent_mean)}`;
  return `${a.agent_id} — ${a.dimension} (${a.source}) ${a.direction} from ${fmt(a.reference)}${mean}; cause ${a.cause}; ${when(a.created_at)}`;
}

async function loadOpenAlerts() {
  const box = $("live-alerts");
  const { alerts } = await api("/api/alerts?open=1");
  box.replaceChildren();
  box.classList.toggle("hidden", alerts.length === 0);
  if (!alerts.length) return;
  box.append(el("h3", `${alerts.length} open drift alert${alerts.length > 1 ? "s" : ""} (drift alerts ack ID)`));
  const list = el("ul");
  for (const a of alerts) {
    const item = el("li", alertLine(a), `cause-${a.cause}`);
    item.title = a.id;
    item.addEventListener("click", () => go(`#/agents/${encodeURIComponent(a.agent_id)}`));
    list.append(item);
  }
  box.append(list);
}

async function showMonitor(agent) {
  const panel = $("agent-monitor");
  const data = await api(`/api/agents/${encodeURIComponent(agent)}/monitor`);
  panel.replaceChildren(el("h3", "Drift monitor"), el("p",
    "First-attempt gate scores (dots), the stream's reference (dashed), the detector's evidence (line, right " +
    "axis up to its alert level log(1/α)) and where it alerted (red).", "muted"));
  const dims = Object.entries(data.dimensions);
  if (!dims.length) panel.append(el("p", "No first-attempt gate scores for this agent yet.", "empty"));
  for (const [dim, d] of dims) panel.append(el("h4", dim), monitorChart(d));
  for (const a of data.alerts) panel.append(el("p", `${a.acknowledged_at ? "acknowledged" : "open"}: ${alertLine(a)}`, `cause-${a.cause}`));
}

function monitorChart(d) {
  const ns = "http://www.w3.org/2000/svg", W = 760, H = 200, P = 36, n = d.scores.length;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const x = (i) => P + (n <= 1 ? (W - 2 * P) / 2 : (i * (W - 2 * P)) / (n - 1));
  const y = (v) => H - P - (v / 9) * (H - 2 * P);
  const top = Math.max(d.threshold * 1.2, ...d.evidence.filter((e) => e !== null));
  const ye = (e) => H - P - (Math.max(e, 0) / top) * (H - 2 * P);
  const add = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    svg.append(node);
    return node;
  };
  d.scores.forEach((s, i) => add("circle", { cx: x(i), cy: y(s), r: 2, fill: "#0969da", class: "score" }));
  if (d.reference !== null) add("line", { x1: P, x2: W - P, y1: y(d.reference), y2: y(d.reference), stroke: "#0969da", "stroke-dasharray": "5 4", class: "reference" });
  add("line", { x1: P, x2: W - P, y1: ye(d.threshold), y2: ye(d.threshold), stroke: "#cf222e", "stroke-dasharray": "2 3" });
  const pts = d.evidence.map((e, i) => [i, e]).filter(([, e]) => e !== null);
  add("polyline", { points: pts.map(([i, e]) => `${x(i)},${ye(e)}`).join(" "), fill: "none", stroke: "#bf8700", "stroke-width": 1.5, class: "evidence" });
  for (const i of d.alerted_at) add("line", { x1: x(i), x2: x(i), y1: P, y2: H - P, stroke: "#cf222e", "stroke-width": 2, class: "alert-mark" });
  return svg;
}

route();

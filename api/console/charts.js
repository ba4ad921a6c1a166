// The Overview's charts as inline SVG: daily runs by release outcome (stacked bars, one per UTC
// day) and each group's latency percentiles (p50 inside p95, one row per run_daily group).
// `runsByDay(rows, first, last)` is the rule the bars follow; tests/browser reads them back.

const SVG = "http://www.w3.org/2000/svg";
export const OUTCOMES = ["SUCCESS", "FALLBACK", "FAILED", "CANCELLED"];

export function node(tag, attributes = {}, text = null) {
  const made = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, String(value));
  if (text !== null) made.textContent = text;
  return made;
}

// Every UTC day from `first` to `last` ("YYYY-MM-DD", both included).
export function days(first, last) {
  const found = [];
  for (let t = Date.parse(`${first}T00:00:00Z`); t <= Date.parse(`${last}T00:00:00Z`); t += 86400000) {
    found.push(new Date(t).toISOString().slice(0, 10));
  }
  return found;
}

// [{day, counts: {outcome: runs}, total}] for every day of the range, run_daily rows summed.
export function runsByDay(rows, first, last) {
  const byDay = new Map(days(first, last).map((d) => [d, { day: d, counts: {}, total: 0 }]));
  for (const row of rows) {
    const entry = byDay.get(row.day);
    if (!entry) continue;
    const outcome = row.release_outcome || "NONE";
    entry.counts[outcome] = (entry.counts[outcome] || 0) + row.runs;
    entry.total += row.runs;
  }
  return [...byDay.values()];
}

const WIDTH = 1000;
const LEFT = 48;
const PLOT = 220;
const TOP = 28;

// Stacked bars of runs per day, each segment one release outcome (data-day, data-outcome,
// data-runs), heights to one scale (data-per-run: the pixels one run is).
export function drawRuns(rows, first, last) {
  const perDay = runsByDay(rows, first, last);
  const most = Math.max(1, ...perDay.map((d) => d.total));
  const perRun = PLOT / most;
  const slot = (WIDTH - LEFT - 8) / perDay.length;
  const height = TOP + PLOT + 40;
  const total = perDay.reduce((sum, d) => sum + d.total, 0);
  const svg = node("svg", {
    viewBox: `0 0 ${WIDTH} ${height}`, role: "img", class: "chart runs-chart",
    "aria-labelledby": "runs-chart-title", "data-per-run": perRun,
  });
  svg.append(node("title", { id: "runs-chart-title" },
    `Finished runs per UTC day from ${first} to ${last}, by release outcome: ${total} in all`));
  svg.append(node("text", { class: "tick", x: LEFT - 6, y: TOP + 4, "text-anchor": "end" }, most));
  svg.append(node("text", { class: "tick", x: LEFT - 6, y: TOP + PLOT, "text-anchor": "end" }, 0));
  svg.append(node("line", { class: "base", x1: LEFT, x2: WIDTH - 8, y1: TOP + PLOT, y2: TOP + PLOT }));
  perDay.forEach((d, i) => svg.append(dayBar(d, i, slot, perRun, perDay.length)));
  return svg;
}

function dayBar(d, index, slot, perRun, count) {
  const x = LEFT + index * slot;
  const g = node("g", { class: "day", "data-day": d.day, "data-total": d.total });
  let y = TOP + PLOT;
  const known = OUTCOMES.filter((o) => d.counts[o]).concat(Object.keys(d.counts).filter((o) => !OUTCOMES.includes(o)));
  for (const outcome of known) {
    const runs = d.counts[outcome];
    const h = runs * perRun;
    y -= h;
    const bar = node("rect", {
      class: `segment ${outcome}`, x: x + slot * 0.15, y, width: slot * 0.7, height: h,
      "data-day": d.day, "data-outcome": outcome, "data-runs": runs,
    });
    bar.append(node("title", {}, `${d.day}: ${runs} ${outcome}`));
    g.append(bar);
  }
  const every = Math.ceil(count / 16); // at most 16 day labels, whatever the range
  if (index % every === 0) {
    g.append(node("text", { class: "tick", x: x + slot / 2, y: TOP + PLOT + 16, "text-anchor": "middle" }, d.day.slice(5)));
  }
  if (d.total) g.append(node("text", { class: "count", x: x + slot / 2, y: y - 4, "text-anchor": "middle" }, d.total));
  return g;
}

export function groupName(row) {
  const parts = [row.day, row.intent || "no intent", row.release_outcome];
  if (row.fallback_type) parts.push(row.fallback_type);
  if (row.termination_state !== row.release_outcome) parts.push(row.termination_state);
  return parts.join(" · ");
}

const LABEL = 420;
const ROW = 22;

// One row per run_daily group: its p95 as a light bar, its p50 as a dark one inside it, both
// to one scale (data-ms-per-px), each with data-ms.
export function drawLatency(rows) {
  const most = Math.max(1, ...rows.map((r) => r.duration_p95_ms));
  const scale = (WIDTH - LABEL - 90) / most;
  const height = TOP + rows.length * ROW + 8;
  const svg = node("svg", {
    viewBox: `0 0 ${WIDTH} ${height}`, role: "img", class: "chart latency-chart",
    "aria-labelledby": "latency-chart-title", "data-px-per-ms": scale,
  });
  svg.append(node("title", { id: "latency-chart-title" },
    `Duration percentiles of each day's group of runs: p50 (dark) inside p95 (light), longest ${most} ms`));
  rows.forEach((row, i) => {
    const y = TOP + i * ROW;
    const g = node("g", { class: `group ${row.release_outcome}`, "data-group": groupName(row) });
    g.append(node("text", { class: "label", x: LABEL - 8, y: y + 15, "text-anchor": "end" }, groupName(row)));
    for (const p of ["p95", "p50"]) {
      const ms = row[`duration_${p}_ms`];
      const bar = node("rect", { class: `percentile ${p}`, x: LABEL, y: y + (p === "p95" ? 3 : 7), width: ms * scale, height: p === "p95" ? ROW - 6 : ROW - 14, "data-percentile": p, "data-ms": ms });
      bar.append(node("title", {}, `${groupName(row)}: ${p} ${ms} ms over ${row.runs} runs`));
      g.append(bar);
    }
    g.append(node("text", { class: "count", x: LABEL + row.duration_p95_ms * scale + 6, y: y + 15 }, `${row.duration_p50_ms} / ${row.duration_p95_ms} ms`));
    svg.append(g);
  });
  return svg;
}

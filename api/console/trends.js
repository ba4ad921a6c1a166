// The Overview's trends as inline SVG: fallback reasons per UTC day (stacked bars, from the
// run_daily rows of GET /v1/stats/daily) and each tool's error rate per UTC day (one bar per
// tool and day, from the tool_stats rows of GET /v1/stats/tools). tests/browser reads the bars'
// data-* attributes back and compares them with the routes' answers.
import { days, node } from "./charts.js";

export const REASONS = [
  "MISSING_REQUIRED_CONTEXT", "INSUFFICIENT_EVIDENCE", "EVIDENCE_VALIDATION_FAILED",
  "SEMANTIC_UNSUPPORTED", "SEMANTIC_UNAVAILABLE",
];
const WIDTH = 1000;
const LEFT = 48;
const PLOT = 160;
const TOP = 24;

// {day: {reason: runs}} of the published fallbacks, for every day of the range.
export function fallbacksByDay(rows, first, last) {
  const byDay = new Map(days(first, last).map((d) => [d, {}]));
  for (const row of rows) {
    const counts = byDay.get(row.day);
    if (!counts || row.release_outcome !== "FALLBACK") continue;
    const reason = row.fallback_type || "NONE";
    counts[reason] = (counts[reason] || 0) + row.runs;
  }
  return byDay;
}

// {day: {tool: {calls, errors}}} of the ended tool calls, for every day of the range.
export function toolErrorsByDay(rows, first, last) {
  const byDay = new Map(days(first, last).map((d) => [d, {}]));
  for (const row of rows) {
    const tools = byDay.get(row.day);
    if (!tools) continue;
    const entry = (tools[row.tool] ||= { calls: 0, errors: 0 });
    entry.calls += row.calls;
    if (row.outcome === "ERROR") entry.errors += row.calls;
  }
  return byDay;
}

function frame(kind, title, top, bottom) {
  const svg = node("svg", {
    viewBox: `0 0 ${WIDTH} ${TOP + PLOT + 40}`, role: "img", class: `chart ${kind}-chart`,
    "aria-labelledby": `${kind}-chart-title`,
  });
  svg.append(node("title", { id: `${kind}-chart-title` }, title));
  svg.append(node("text", { class: "tick", x: LEFT - 6, y: TOP + 4, "text-anchor": "end" }, top));
  svg.append(node("text", { class: "tick", x: LEFT - 6, y: TOP + PLOT, "text-anchor": "end" }, bottom));
  svg.append(node("line", { class: "base", x1: LEFT, x2: WIDTH - 8, y1: TOP + PLOT, y2: TOP + PLOT }));
  return svg;
}

function dayLabel(g, day, index, count, x) {
  const every = Math.ceil(count / 16);
  if (index % every === 0) {
    g.append(node("text", { class: "tick", x, y: TOP + PLOT + 16, "text-anchor": "middle" }, day.slice(5)));
  }
}

// Stacked bars of fallbacks per day, one segment per reason (data-day, data-reason, data-runs).
export function drawFallbacks(rows, first, last) {
  const byDay = [...fallbacksByDay(rows, first, last)];
  const totals = byDay.map(([, counts]) => Object.values(counts).reduce((a, b) => a + b, 0));
  const most = Math.max(1, ...totals);
  const perRun = PLOT / most;
  const slot = (WIDTH - LEFT - 8) / byDay.length;
  const all = totals.reduce((a, b) => a + b, 0);
  const svg = frame("fallbacks", `Published fallbacks per UTC day from ${first} to ${last}, by reason: ${all} in all`, most, 0);
  svg.dataset.perRun = perRun;
  byDay.forEach(([day, counts], i) => {
    const x = LEFT + i * slot;
    const g = node("g", { class: "day", "data-day": day });
    let y = TOP + PLOT;
    for (const reason of Object.keys(counts).sort()) {
      const h = counts[reason] * perRun;
      y -= h;
      const bar = node("rect", {
        class: `segment reason ${reason}`, x: x + slot * 0.15, y, width: slot * 0.7, height: h,
        "data-day": day, "data-reason": reason, "data-runs": counts[reason],
      });
      bar.append(node("title", {}, `${day}: ${counts[reason]} ${reason}`));
      g.append(bar);
    }
    dayLabel(g, day, i, byDay.length, x + slot / 2);
    svg.append(g);
  });
  return svg;
}

// One bar per tool and day, its height the share of that day's calls that failed (data-day,
// data-tool, data-calls, data-errors, data-rate); a full-height outline marks the calls.
export function drawToolErrors(rows, first, last) {
  const byDay = [...toolErrorsByDay(rows, first, last)];
  const tools = [...new Set(rows.map((r) => r.tool))].sort();
  const slot = (WIDTH - LEFT - 8) / byDay.length;
  const width = (slot * 0.8) / Math.max(1, tools.length);
  const svg = frame("tool-errors", `Share of each tool's calls that failed, per UTC day from ${first} to ${last}`, "100%", "0%");
  byDay.forEach(([day, found], i) => {
    const x = LEFT + i * slot + slot * 0.1;
    const g = node("g", { class: "day", "data-day": day });
    tools.forEach((tool, t) => {
      const entry = found[tool];
      if (!entry) return;
      const rate = entry.errors / entry.calls;
      const at = x + t * width;
      g.append(node("rect", { class: "calls", x: at, y: TOP, width: width * 0.9, height: PLOT }));
      const bar = node("rect", {
        class: "rate", x: at, y: TOP + PLOT - rate * PLOT, width: width * 0.9, height: rate * PLOT,
        "data-day": day, "data-tool": tool, "data-calls": entry.calls, "data-errors": entry.errors, "data-rate": rate,
      });
      bar.append(node("title", {}, `${day} ${tool}: ${entry.errors} of ${entry.calls} calls failed`));
      g.append(bar);
    });
    dayLabel(g, day, i, byDay.length, LEFT + i * slot + slot / 2);
    svg.append(g);
  });
  return svg;
}

// A run's timeline as an SVG picture: one lane per phase, drawn to scale in time.
// `lanes(events)` is the rule (tests/browser checks the drawn SVG against the run's events);
// `draw(events, run)` makes the picture.

const SVG = "http://www.w3.org/2000/svg";
const COLLECTION = new Set([
  "COLLECTION_STARTED", "TOOL_PROGRESS", "PROGRESS_PROTOCOL_VIOLATION", "COLLECTION_STOP",
  "STOP_REQUIRED_DELIVERED",
]);

const time = (event) => Date.parse(event.timestamp);

// The lanes of a run's trace events (in log order), each {key, kind, label, state, marks}.
export function lanes(events) {
  const found = new Map();
  let models = 0;
  const lane = (key, kind, label, state) => {
    if (!found.has(key)) found.set(key, { key, kind, label, state, marks: [] });
    return found.get(key);
  };
  const mark = (into, event, start = time(event)) => {
    into.marks.push({ start, end: time(event), type: event.event_type, status: event.status });
  };
  for (const event of events) {
    const a = event.attributes || {};
    const type = event.event_type;
    if (type === "ROUTING_ATTEMPT" || type === "ROUTING_DECISION") {
      const into = lane("routing", "routing", "routing", "RUNNING");
      if (type === "ROUTING_DECISION") into.state = a.intent || "FAILED";
      mark(into, event, into.marks.length ? into.marks[0].start : time(event));
    } else if (type === "AGENT_MODEL_STEP") {
      models += 1;
      const into = lane(`model-${models}`, "model", `model call ${models} · ${a.purpose}`, a.outcome);
      mark(into, event, time(event) - (a.latency_ms || 0));
    } else if (type === "TOOL_INVOCATION_STARTED") {
      mark(lane(`tool-${event.stream_id}`, "tool", `tool ${a.tool}`, "STARTED"), event);
    } else if (type === "TOOL_INVOCATION_READY" || type === "TOOL_INVOCATION_FAILED") {
      const into = lane(`tool-${event.stream_id}`, "tool", "tool", "STARTED");
      into.state = type === "TOOL_INVOCATION_FAILED" ? "FAILED"
        : a.evidence_status === "NO_EVIDENCE" ? "NO_EVIDENCE" : "READY";
      mark(into, event, into.marks.length ? into.marks[0].start : time(event));
    } else if (type === "TOOL_REQUEST_REJECTED") {
      mark(lane(`rejected-${event.position}`, "tool", `tool ${a.tool}`, "REJECTED"), event);
    } else if (COLLECTION.has(type)) {
      const into = lane("collection", "collection", "collection", "COLLECTING");
      if (type === "COLLECTION_STOP") into.state = a.stop_reason;
      mark(into, event);
    } else if (type === "EVIDENCE_GUARD_INITIAL" || type === "EVIDENCE_GUARD_RECHECK") {
      const into = lane("evidence-guard", "guard", "evidence guard", "");
      into.state = a.valid ? "VALID" : "INVALID";
      mark(into, event);
    } else if (type === "EVIDENCE_REPAIR") {
      mark(lane("repair", "guard", "repair", "REPAIRED"), event);
    } else if (type === "SEMANTIC_GUARD_ATTEMPT" || type === "SEMANTIC_GUARD_DECISION") {
      const into = lane("semantic-guard", "guard", "semantic guard", "RUNNING");
      if (type === "SEMANTIC_GUARD_DECISION") into.state = a.verdict || "UNAVAILABLE";
      mark(into, event, into.marks.length ? into.marks[0].start : time(event));
    } else if (type === "RELEASE_DECISION") {
      const state = a.fallback_type ? `${a.outcome} · ${a.fallback_type}` : a.outcome;
      mark(lane("release", "release", "release", state), event);
    } else if (type === "RUN_TERMINATED") {
      mark(lane("termination", "termination", "termination", `${a.state} · ${a.reason}`), event);
    }
  }
  return [...found.values()];
}

// The vertical markers: a cancel request, an exhausted budget, a deadline that was reached.
export function markers(events, run) {
  const found = [];
  for (const event of events) {
    const a = event.attributes || {};
    if (event.event_type === "CANCELLATION_REQUESTED") {
      found.push({ kind: "cancel", label: `cancel: ${a.reason}`, at: time(event) });
    } else if (event.event_type === "BUDGET_EXHAUSTED") {
      found.push({ kind: "budget", label: `budget exhausted: ${a.kind}`, at: time(event) });
    }
  }
  const reached = run.termination_state === "TIMED_OUT"
    || found.some((m) => m.label === "cancel: DEADLINE_EXCEEDED");
  if (reached && run.deadline) {
    found.push({ kind: "deadline", label: "deadline", at: Date.parse(run.deadline) });
  }
  return found;
}

function node(tag, attributes = {}, text = null) {
  const made = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, String(value));
  if (text !== null) made.textContent = text;
  return made;
}

const LABEL = 250;
const WIDTH = 1000;
const ROW = 24;
const TOP = 40;

// The SVG picture of `events` (the run's trace, in log order) for `run` (its row).
export function draw(events, run) {
  const rows = lanes(events);
  const marks = markers(events, run);
  const times = events.map(time).concat(marks.map((m) => m.at));
  rows.forEach((r) => r.marks.forEach((m) => times.push(m.start)));
  const t0 = Math.min(...times);
  const span = Math.max(1, Math.max(...times) - t0);
  const x = (t) => LABEL + ((t - t0) / span) * (WIDTH - LABEL - 16);
  const height = TOP + rows.length * ROW + 8;
  const svg = node("svg", {
    viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, role: "img",
    "aria-labelledby": "timeline-title", class: "timeline", "data-span-ms": span,
  });
  svg.append(node("title", { id: "timeline-title" }, `Timeline of run ${run.run_id}: ${rows.length} lanes over ${span} ms`));
  axis(svg, x, t0, span, height);
  rows.forEach((r, index) => svg.append(laneGroup(r, index, x)));
  for (const m of marks) {
    const g = node("g", { class: `marker ${m.kind}`, "data-marker": m.kind });
    g.append(node("line", { x1: x(m.at), x2: x(m.at), y1: TOP - 6, y2: height - 4 }));
    const right = x(m.at) > WIDTH * 0.7; // near the right edge: the label goes to the left
    g.append(node("text", { x: x(m.at) + (right ? -4 : 4), y: TOP - 6, "text-anchor": right ? "end" : "start" }, m.label));
    g.append(node("title", {}, `${m.label} at ${new Date(m.at).toISOString()}`));
    svg.append(g);
  }
  return svg;
}

function axis(svg, x, t0, span, height) {
  const g = node("g", { class: "axis" });
  for (let i = 0; i <= 4; i += 1) {
    const t = t0 + (span * i) / 4;
    g.append(node("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: height - 4 }));
    g.append(node("text", { x: x(t), y: 12, "text-anchor": i === 4 ? "end" : "middle" },
      `+${Math.round(t - t0)} ms`));
  }
  svg.append(g);
}

function laneGroup(r, index, x) {
  const y = TOP + index * ROW;
  const tone = /FAILED|INVALID|UNSUPPORTED|REJECTED|ERROR|TIMEOUT|CANCELLED|TIMED_OUT|EXHAUSTED/
    .test(r.state) ? "bad" : /NO_EVIDENCE|FALLBACK|RUNNING|STARTED/.test(r.state) ? "meh" : "good";
  const g = node("g", {
    class: `lane ${r.kind} ${tone}`, "data-lane": r.key, "data-kind": r.kind,
    "data-label": r.label, "data-state": r.state,
  });
  g.append(node("rect", { class: "band", x: 0, y, width: WIDTH, height: ROW }));
  g.append(node("text", { class: "label", x: 6, y: y + 16 }, `${r.label} — ${r.state}`));
  for (const m of r.marks) {
    const left = x(m.start);
    const width = Math.max(4, x(m.end) - left);
    const bar = node("rect", { class: `mark ${m.status}`, x: left, y: y + 5, width, height: ROW - 10, rx: 2 });
    bar.append(node("title", {}, `${m.type} (${m.status}), ${Math.round(m.end - m.start)} ms`));
    g.append(bar);
  }
  return g;
}

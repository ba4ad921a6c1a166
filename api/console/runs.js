// The runs page: newest first, narrowed by the filters in the address, a page at a time.
import { el, getJson, keyForm, say } from "./api.js";
import { duration, outcome, utc } from "./words.js";

const PAGE = 25;
const REFRESH_MS = 3000; // the first page asks again this often while it is shown and Live is on
const FILTERS = ["session_id", "intent", "release_outcome", "fallback_type", "state", "created_after", "created_before"];

function wanted() {
  const query = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of FILTERS) {
    const value = query.get(name);
    if (value) params.set(name, value);
  }
  const offset = Math.max(0, Number.parseInt(query.get("offset") || "0", 10) || 0);
  return { params, offset };
}

function go(params, offset) {
  const next = new URLSearchParams(params);
  if (offset > 0) next.set("offset", String(offset));
  location.search = next.toString();
}

function fillForm(form, params) {
  for (const name of FILTERS) form.elements[name].value = params.get(name) || "";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of FILTERS) {
      const value = form.elements[name].value.trim();
      if (value) chosen.set(name, value);
    }
    go(chosen, 0);
  });
  form.addEventListener("reset", () => go(new URLSearchParams(), 0));
}

function row(run) {
  const said = outcome(run);
  const link = el("a", { href: `/console/runs/${encodeURIComponent(run.run_id)}` }, run.query);
  // data-label names each cell where a narrow screen shows a row as a card (console.css)
  return el(
    "tr",
    { "data-run-id": run.run_id },
    el("td", { "data-label": "Created" }, utc(run.created_at)),
    el("td", { className: "question", "data-label": "Question" }, link),
    el("td", { "data-label": "Intent" }, run.intent || "—"),
    el("td", { "data-label": "Outcome" }, el("span", { className: `outcome ${said.tone}`, "data-tone": said.tone }, said.words)),
    el("td", { className: "number", "data-label": "Duration" }, duration(run.duration_ms)),
    el("td", { className: "number", "data-label": "Tool calls" }, run.tool_calls),
    el("td", { "data-label": "Session" }, run.session_id),
  );
}

let shown = ""; // the answer on screen, to redraw only when a refresh brings something new
let timer = 0;
let asked = 0; // the newest load asked for: an older answer arriving late is dropped

async function load() {
  const { params, offset } = wanted();
  const body = document.querySelector("#runs tbody");
  const query = new URLSearchParams(params);
  query.set("limit", String(PAGE));
  query.set("offset", String(offset));
  clearTimeout(timer);
  const mine = ++asked;
  const got = await getJson(`/v1/runs?${query}`, "these runs");
  if (mine !== asked) return;
  if (!got.ok) {
    body.replaceChildren();
    shown = "";
    say(got.message);
    document.body.dataset.loaded = "error";
    return;
  }
  say("");
  const live = document.getElementById("live");
  live.disabled = offset > 0; // a later page keeps still: rows would shift under the reader
  if (offset === 0) timer = setTimeout(refresh, REFRESH_MS);
  const answer = JSON.stringify(got.data);
  if (answer === shown) return;
  shown = answer;
  const { data, count, count_capped: capped } = got.data;
  body.replaceChildren(...data.map(row));
  if (data.length === 0) body.append(el("tr", {}, el("td", { colSpan: 7 }, "No runs match.")));
  const first = count === 0 ? 0 : offset + 1;
  document.getElementById("page-info").textContent = `${first}–${offset + data.length} of ${count}${capped ? "+" : ""}`;
  const newer = document.getElementById("newer");
  const older = document.getElementById("older");
  newer.disabled = offset === 0;
  older.disabled = got.data.next_cursor === null; // null: no older runs
  newer.onclick = () => go(params, Math.max(0, offset - PAGE));
  older.onclick = () => go(params, offset + PAGE);
  document.body.dataset.loaded = "runs";
}

function refresh() {
  const live = document.getElementById("live");
  if (!live.checked || live.disabled) return;
  if (document.hidden) {
    timer = setTimeout(refresh, REFRESH_MS);
    return;
  }
  load();
}

document.getElementById("live").addEventListener("change", refresh);
document.addEventListener("visibilitychange", () => document.hidden || refresh());
fillForm(document.getElementById("filters"), wanted().params);
keyForm(load);
load();

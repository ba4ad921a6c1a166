// The run page: its summary, timeline picture, published answer and evidence, explain, events.
import { el, getJson, keyForm, say } from "./api.js";
import { evidence, published } from "./answer.js";
import { follow } from "./live.js";
import { draw } from "./timeline.js";
import { duration, outcome, shown, utc } from "./words.js";

const runId = decodeURIComponent(location.pathname.split("/").pop() || "");

function summary(run) {
  const said = outcome(run);
  const pairs = [
    ["Outcome", el("span", { className: `outcome ${said.tone}`, "data-tone": said.tone }, said.words)],
    ["Intent", run.intent || "—"],
    ["Termination", run.termination_state ? `${run.termination_state} (${run.termination_reason})` : "running"],
    ["Stop reason", run.stop_reason || "—"],
    ["Created (UTC)", utc(run.created_at)],
    ["Duration", duration(run.duration_ms)],
    ["Model calls", run.model_calls],
    ["Tool calls", `${run.tool_calls} (${run.rejected_tool_requests} rejected)`],
    ["Tokens", `${run.tokens_in} in, ${run.tokens_out} out`],
    ["Session", el("a", { href: `/console/sessions/${encodeURIComponent(run.session_id)}` }, run.session_id)],
    ["Owner", run.owner],
    ["Run id", run.run_id],
  ];
  return pairs.flatMap(([term, value]) => [el("dt", {}, term), el("dd", {}, value)]);
}

function explained(explanation) {
  return explanation.answers.flatMap((a) => [
    el("dt", { className: a.applies ? "" : "quiet" }, a.asked),
    el("dd", { className: a.applies ? "" : "quiet", "data-question": a.question }, shown(a.answer)),
  ]);
}

function replayed(replays) {
  return replays.map((r) => {
    const changes = Object.entries(r.changes).map(([k, v]) => `${k} ${v}`).join("; ") || "nothing changed";
    const was = [r.original_outcome, r.original_fallback_type].filter(Boolean).join(" ");
    const now = [r.outcome, r.fallback_type].filter(Boolean).join(" ");
    const said = r.differences.length ? `${was} → ${now}` : `${now}: the same decision`;
    return el(
      "li",
      { "data-replay": r.number, "data-differs": r.differences.length ? "yes" : "no" },
      el("p", {}, el("strong", {}, `${utc(r.replayed_at)} (${changes})`), ` ${said}`),
      el("ul", {}, ...r.differences.map((d) => el("li", {}, shown(d)))),
    );
  });
}

function rawTable(events) {
  const head = el("tr", {}, ...["Position", "Event", "Phase", "Status", "Time (UTC)", "Attributes"].map((h) => el("th", { scope: "col" }, h)));
  const rows = events.map((e) => el(
    "tr",
    { "data-position": e.position },
    el("td", { className: "number" }, e.position),
    el("td", {}, e.event_type),
    el("td", {}, e.phase),
    el("td", {}, e.status),
    el("td", {}, e.timestamp.replace("T", " ").replace("Z", "")),
    el("td", {}, el("pre", {}, JSON.stringify(e.attributes, null, 1))),
  ));
  return [el("thead", {}, head), el("tbody", {}, ...rows)];
}

async function load() {
  const what = `run ${runId}`;
  const [run, trace, explanation] = await Promise.all([
    getJson(`/v1/runs/${encodeURIComponent(runId)}`, what),
    getJson(`/v1/runs/${encodeURIComponent(runId)}/trace`, `the events of ${what}`),
    getJson(`/v1/runs/${encodeURIComponent(runId)}/explain`, `the explanation of ${what}`),
  ]);
  const failed = [run, trace, explanation].find((got) => !got.ok);
  const page = document.getElementById("run");
  if (failed) {
    page.hidden = true;
    say(failed.message);
    document.body.dataset.loaded = "error";
    return;
  }
  say("");
  const r = run.data;
  const events = trace.data.data;
  document.getElementById("title").textContent = r.query;
  document.title = `${r.query} · Diagnosis Harness`;
  document.getElementById("summary").replaceChildren(...summary(r));
  document.getElementById("timeline").replaceChildren(draw(events, r));
  const content = r.published_result || r.safe_answer;
  document.getElementById("answer").replaceChildren(...published(content, r.status !== "RUNNING"));
  document.getElementById("evidence").replaceChildren(...evidence(events, content));
  document.getElementById("explain").replaceChildren(...explained(explanation.data));
  const replays = explanation.data.replays || [];
  document.getElementById("replays").replaceChildren(...replayed(replays));
  document.getElementById("replays-section").hidden = replays.length === 0;
  document.getElementById("raw-table").replaceChildren(...rawTable(events));
  page.hidden = false;
  document.body.dataset.loaded = "run";
  if (r.status === "RUNNING" && !following) watch();
}

// While the run is going, every event of its stream redraws the page from the API.
let following = false;
let pending = Promise.resolve();

function watch() {
  following = true;
  const live = document.getElementById("live");
  const words = { following: "Live: following the run as it goes.", reconnecting: "Reconnecting…", ended: "" };
  follow(
    runId,
    () => {
      pending = pending.then(load);
    },
    (state) => {
      live.textContent = words[state];
      document.body.dataset.live = state;
      if (state === "ended") pending = pending.then(load);
    },
  );
}

keyForm(load);
load();

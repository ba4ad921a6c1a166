// The ask page: ask a question, watch the run's statuses and its answer arrive, cancel it.
// The run is started detached (POST /v1/runs) and followed on its stream, so leaving or
// reloading the page never cancels it; only the Cancel button does.
import { el, keyForm, postJson, say } from "./api.js";
import { published } from "./answer.js";
import { follow } from "./live.js";

let current = null;

function onEvent(event) {
  const data = event.data ? JSON.parse(event.data) : {};
  const page = document.body.dataset;
  if (event.event === "status") {
    document.getElementById("statuses").append(el("li", { "data-status": data.status }, data.status));
  } else if (event.event === "content") {
    const fallback = data.fallback_type ? ` (${data.fallback_type})` : "";
    document.getElementById("ending").textContent = `Released: ${data.release_outcome}${fallback}`;
    document.getElementById("answer").replaceChildren(...published(data.content, true));
    page.outcome = data.release_outcome;
  } else if (event.event === "failure") {
    const why = data.termination_state ? ` (${data.termination_state}: ${data.termination_reason})` : "";
    document.getElementById("ending").textContent = `Nothing published: ${data.release_outcome}${why}`;
    page.outcome = data.release_outcome;
  }
}

function onState(state) {
  document.body.dataset.live = state;
  if (state === "reconnecting") document.body.dataset.reconnects = String(Number(document.body.dataset.reconnects || 0) + 1);
  if (state === "ended") document.getElementById("cancel").disabled = true;
}

async function ask(event) {
  event.preventDefault();
  const form = event.target;
  const body = { query: form.elements.query.value };
  const session = form.elements.session_id.value.trim();
  if (session) body.session_id = session;
  const started = await postJson("/v1/runs", body, "start a run");
  if (!started.ok) {
    say(started.message);
    return;
  }
  say("");
  current = started.data.run_id;
  form.elements.session_id.value = started.data.session_id; // the next question continues it
  document.getElementById("statuses").replaceChildren();
  document.getElementById("answer").replaceChildren();
  document.getElementById("ending").textContent = "";
  document.getElementById("run-link").href = `/console/runs/${encodeURIComponent(current)}`;
  document.getElementById("cancel").disabled = false;
  document.getElementById("progress").hidden = false;
  delete document.body.dataset.outcome;
  document.body.dataset.runId = current;
  const mine = current; // a later question's run replaces this one on the page
  follow(
    mine,
    (e) => mine === current && onEvent(e),
    (state) => mine === current && onState(state),
  );
}

async function cancel() {
  if (!current) return;
  const got = await postJson(`/v1/runs/${encodeURIComponent(current)}/cancel`, undefined, "cancel this run");
  if (!got.ok) say(got.message);
  else if (!got.data.cancelled) say(`The run had already ended (${got.data.termination_state}).`);
}

document.getElementById("ask").addEventListener("submit", ask);
document.getElementById("cancel").addEventListener("click", cancel);
keyForm(() => say(""));
document.body.dataset.loaded = "ask";

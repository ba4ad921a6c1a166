// The session page: its turns in order and what each published.
import { el, getJson, keyForm, say } from "./api.js";
import { utc } from "./words.js";

const sessionId = decodeURIComponent(location.pathname.split("/").pop() || "");

function turnRow(turn) {
  const content = turn.published_result;
  const text = content ? content.conclusion || content.text || content.message || "" : "—";
  return el(
    "tr",
    { "data-run-id": turn.run_id },
    el("td", { className: "number" }, turn.turn),
    el("td", {}, utc(turn.created_at)),
    el("td", { className: "question" }, el("a", { href: `/console/runs/${encodeURIComponent(turn.run_id)}` }, turn.query)),
    el("td", {}, turn.intent || "—"),
    el("td", { "data-release": turn.release_outcome || "" }, turn.release_outcome || "running"),
    el("td", { className: "question" }, text),
  );
}

async function load() {
  const got = await getJson(`/v1/sessions/${encodeURIComponent(sessionId)}`, `session ${sessionId}`);
  const table = document.getElementById("turns");
  if (!got.ok) {
    table.hidden = true;
    say(got.message);
    document.body.dataset.loaded = "error";
    return;
  }
  say("");
  document.getElementById("title").textContent = `Session ${got.data.session_id} (${got.data.owner})`;
  table.querySelector("tbody").replaceChildren(...got.data.data.map(turnRow));
  table.hidden = false;
  document.body.dataset.loaded = "session";
}

keyForm(load);
load();

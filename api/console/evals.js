// The Overview's eval history: every evaluation `harness eval` recorded, one table per model,
// newest first, from GET /v1/evals. Any role may read it (an evaluation holds no user's data).
import { el, getJson } from "./api.js";

const SHOWN = 200;
const COUNTS = [
  ["correct", "Correct"],
  ["fallback", "Fallback"],
  ["wrong", "Wrong"],
  ["published_wrong", "Published and wrong"],
];

function when(text) {
  return text ? `${text.slice(0, 16).replace("T", " ")} UTC` : "";
}

function row(e) {
  return el(
    "tr",
    { "data-eval-id": e.eval_id },
    el("td", {}, el("time", { dateTime: e.started_at, title: e.eval_id }, when(e.started_at))),
    el("td", { className: "question" }, e.suite),
    el("td", { className: "question" }, e.model),
    ...COUNTS.map(([name]) => el("td", { className: `number ${name}`, "data-count": name }, e[name])),
    el("td", { className: "number cases" }, e.finished_at ? e.cases : `${e.scored} of ${e.cases}`),
  );
}

function table(model, evals) {
  const head = el(
    "tr",
    {},
    ...["When", "Suite", "Model", ...COUNTS.map(([, title]) => title), "Cases"].map((title) =>
      el("th", { scope: "col" }, title),
    ),
  );
  return el(
    "div",
    { className: "scroll" },
    el(
      "table",
      { className: "evals", "data-model": model },
      el("caption", {}, `Model ${model}: ${evals.length} evaluation(s), newest first`),
      el("thead", {}, head),
      el("tbody", {}, ...evals.map(row)),
    ),
  );
}

function byModel(evals) {
  const models = new Map();
  for (const e of evals) {
    if (!models.has(e.model)) models.set(e.model, []);
    models.get(e.model).push(e);
  }
  return models;
}

// Draw the eval history into #eval-models; the body's data-evals says loaded, empty or error.
export async function loadEvals() {
  const place = document.getElementById("eval-models");
  const message = document.getElementById("evals-message");
  const got = await getJson(`/v1/evals?limit=${SHOWN}`, "read the eval history");
  if (!got.ok) {
    place.replaceChildren();
    message.textContent = got.message;
    message.hidden = false;
    document.body.dataset.evals = "error";
    return;
  }
  message.hidden = true;
  const { data, count } = got.data;
  if (!data.length) {
    place.replaceChildren(
      el("p", { className: "empty" }, "No evaluation recorded yet: run harness eval to record one."),
    );
    document.body.dataset.evals = "empty";
    return;
  }
  const more = count > data.length ? [el("p", { className: "hint" }, `The newest ${data.length} of ${count} evaluations.`)] : [];
  const tables = [...byModel(data)].map(([model, evals]) =>
    el("section", {}, el("h3", {}, model), table(model, evals)),
  );
  place.replaceChildren(...more, ...tables);
  document.body.dataset.evals = "loaded";
}

// The overview page: daily runs by outcome, fallback reasons and latency percentiles, drawn from
// GET /v1/stats/daily; tool error rates from GET /v1/stats/tools (trends.js); and the eval
// history per model (evals.js).
import { el, getJson, keyForm, say } from "./api.js";
import { OUTCOMES, drawLatency, drawRuns, groupName } from "./charts.js";
import { loadEvals } from "./evals.js";
import { REASONS, drawFallbacks, drawToolErrors } from "./trends.js";

const RANGE = ["from", "to"];

function wanted() {
  const query = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of RANGE) {
    const value = query.get(name);
    if (value) params.set(name, value);
  }
  return params;
}

function fillForm(form, params) {
  for (const name of RANGE) form.elements[name].value = params.get(name) || "";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of RANGE) if (form.elements[name].value) chosen.set(name, form.elements[name].value);
    location.search = chosen.toString();
  });
  form.addEventListener("reset", () => { location.search = ""; });
}

function legend(names = OUTCOMES) {
  return names.map((o) => el("span", { className: `swatch ${o}` }, o));
}

function row(r) {
  return el(
    "tr",
    { "data-group": groupName(r) },
    el("td", {}, groupName(r)),
    el("td", { className: "number" }, r.runs),
    el("td", { className: "number" }, `${r.duration_p50_ms} ms`),
    el("td", { className: "number" }, `${r.duration_p95_ms} ms`),
    el("td", { className: "number" }, r.tokens_in),
    el("td", { className: "number" }, r.tokens_out),
  );
}

async function load() {
  const charts = document.getElementById("charts");
  const got = await getJson(`/v1/stats/daily?${wanted()}`, "read the daily totals (auditors and admins only)");
  if (!got.ok) {
    charts.hidden = true;
    say(got.message);
    document.body.dataset.loaded = "error";
    return;
  }
  say("");
  const { first_day: first, last_day: last, data } = got.data;
  const form = document.getElementById("range");
  form.elements.from.value = first; // the days shown, also when the address named none
  form.elements.to.value = last;
  document.getElementById("legend").replaceChildren(...legend());
  document.getElementById("runs-figure").replaceChildren(
    drawRuns(data, first, last),
    el("figcaption", {}, `Finished runs per UTC day, ${first} to ${last}`),
  );
  const latency = document.getElementById("latency-figure");
  latency.replaceChildren(
    data.length ? drawLatency(data) : el("p", {}, "No run finished in these days."),
  );
  document.querySelector("#daily tbody").replaceChildren(...data.map(row));
  document.getElementById("reasons-legend").replaceChildren(...legend(REASONS));
  document.getElementById("fallbacks-figure").replaceChildren(
    drawFallbacks(data, first, last),
    el("figcaption", {}, `Published fallbacks per UTC day by reason, ${first} to ${last}`),
  );
  await loadTools(first, last);
  charts.hidden = false;
  document.body.dataset.loaded = "overview";
}

async function loadTools(first, last) {
  const figure = document.getElementById("tool-errors-figure");
  const message = document.getElementById("tools-message");
  const got = await getJson(`/v1/stats/tools?from=${first}&to=${last}`, "read the tool totals (auditors and admins only)");
  message.hidden = got.ok;
  message.textContent = got.ok ? "" : got.message;
  if (!got.ok) {
    figure.replaceChildren();
    return;
  }
  const rows = got.data.data;
  figure.replaceChildren(
    rows.length ? drawToolErrors(rows, first, last) : el("p", {}, "No tool call ended in these days."),
    el("figcaption", {}, `Share of each tool's calls that failed per UTC day, ${first} to ${last}`),
  );
}

fillForm(document.getElementById("range"), wanted());
keyForm(() => {
  load();
  loadEvals();
});
load();
loadEvals();

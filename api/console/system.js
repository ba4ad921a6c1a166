// The system page: each projection's position in the log and its lag.
import { el, getJson, keyForm, say } from "./api.js";

async function load() {
  const got = await getJson("/v1/projections", "the projections");
  const table = document.getElementById("projections");
  if (!got.ok) {
    table.hidden = true;
    say(got.message);
    document.body.dataset.loaded = "error";
    return;
  }
  say("");
  document.getElementById("head").textContent = `The log's head is at position ${got.data.head}.`;
  table.querySelector("tbody").replaceChildren(
    ...got.data.data.map((p) => el(
      "tr",
      { "data-projection": p.name },
      el("td", {}, p.name),
      el("td", { className: "number" }, p.position),
      el("td", { className: "number" }, p.lag === 0 ? "up to date" : `${p.lag} behind`),
    )),
  );
  table.hidden = false;
  document.body.dataset.loaded = "system";
}

document.getElementById("refresh").addEventListener("click", load);
keyForm(load);
load();

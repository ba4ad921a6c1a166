// The system page: each projection's position in the log and its lag; for auditors and admins
// the workers' leases and, on demand, the audit verification of the log and the read tables.
import { el, getJson, keyForm, postJson, say } from "./api.js";

function sayIn(id, text) {
  const where = document.getElementById(id);
  where.textContent = text;
  where.hidden = !text;
}

async function projections() {
  const got = await getJson("/v1/projections", "the projections");
  const table = document.getElementById("projections");
  if (!got.ok) {
    table.hidden = true;
    say(got.message);
    return false;
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
  return true;
}

function ago(seconds) {
  const s = Math.round(seconds);
  return s >= 0 ? `${s} s ago` : `in ${-s} s`;
}

async function workers() {
  const got = await getJson("/v1/workers", "read the workers' leases (auditors and admins only)");
  const table = document.getElementById("workers");
  if (!got.ok) {
    table.hidden = true;
    sayIn("workers-message", got.message);
    return;
  }
  sayIn("workers-message", got.data.count ? "" : "No worker holds a lease.");
  const now = got.data.now;
  table.querySelector("tbody").replaceChildren(
    ...got.data.data.map((w) => el(
      "tr",
      { "data-worker": w.worker_id, "data-state": w.state },
      el("td", {}, w.worker_id),
      el("td", {}, w.host),
      el("td", { className: "number" }, w.pid),
      el("td", {}, w.state),
      el("td", {}, ago(now - w.beat_at)),
      el("td", {}, ago(now - w.expires_at)),
    )),
  );
  table.hidden = got.data.count === 0;
}

function showReport(report) {
  const summary = document.getElementById("verify-summary");
  summary.textContent = report.clean
    ? `Clean: ${report.summary}.`
    : `Violations found: ${report.summary}.`;
  summary.className = `report ${report.clean ? "clean" : "dirty"}`;
  summary.dataset.clean = String(report.clean);
  document.getElementById("verify-checks").replaceChildren(...report.checks.map((c) => el("li", {}, c)));
  const list = document.getElementById("violations");
  list.replaceChildren(...report.violations.map((v) => el("li", { "data-rule": v.rule }, v.text)));
  list.hidden = report.clean;
  document.getElementById("violations-title").hidden = report.clean;
  document.getElementById("verify-report").hidden = false;
}

async function verify() {
  const button = document.getElementById("verify");
  button.disabled = true;
  button.textContent = "Verifying… (reading the whole log)";
  document.body.dataset.verified = "";
  const got = await postJson("/v1/audit/verify", undefined, "verify the log (auditors and admins only)");
  button.disabled = false;
  button.textContent = "Verify the log now";
  sayIn("verify-message", got.ok ? "" : got.message);
  if (got.ok) showReport(got.data);
  else document.getElementById("verify-report").hidden = true;
  document.body.dataset.verified = got.ok ? "report" : "error";
}

async function load() {
  const ok = await projections();
  await workers();
  document.body.dataset.loaded = ok ? "system" : "error";
}

document.getElementById("refresh").addEventListener("click", load);
document.getElementById("verify").addEventListener("click", verify);
keyForm(load);
load();

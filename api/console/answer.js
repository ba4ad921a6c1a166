// What a run published, with each citation linked to the evidence excerpt it quotes.
import { el } from "./api.js";
import { shown } from "./words.js";

const anchor = (reference) => `evidence-${reference}`;

function citationList(citations) {
  if (!citations || citations.length === 0) return null;
  return el(
    "ol",
    { className: "citations" },
    ...citations.map((c) =>
      el("li", {}, el("a", { href: `#${anchor(c.reference)}`, className: "citation", "data-reference": c.reference }, `“${shown(c.excerpt)}”`)),
    ),
  );
}

function list(title, items, render = (item) => shown(item)) {
  if (!items || items.length === 0) return [];
  return [el("h3", {}, title), el("ul", {}, ...items.map((item) => el("li", {}, render(item))))];
}

// The published content (a diagnosis, an answer or a fallback) as elements.
export function published(content, finished) {
  if (!content) return [el("p", {}, finished ? "Nothing was published." : "Nothing is published yet: the run is still going.")];
  const text = content.conclusion || content.text || content.message || "";
  const parts = [el("p", { className: `published ${content.kind}` }, shown(text))];
  const cited = citationList(content.citations);
  if (cited) parts.push(el("h3", {}, "Citations"), cited);
  parts.push(...list("Facts", content.facts, (fact) => el("span", {}, shown(fact.statement), citationList(fact.citations))));
  // A fallback quotes the evidence records behind the proven statements, in the harness's words
  // (FallbackContent.observations), each linked to the result it comes from.
  parts.push(...list("What the tools returned", content.observations, (o) =>
    el("a", { href: `#${anchor(o.reference)}`, className: "observation", "data-reference": o.reference }, shown(o.text))));
  // Only a fallback recorded before observations holds the model's statements. As
  // FallbackContent.facts_judged (domain/published.py): only after an UNSUPPORTED conclusion did
  // the judge answer for these statements; otherwise only their quotes were checked.
  const judged = content.fallback_type === "SEMANTIC_UNSUPPORTED";
  const factsTitle = judged ? "Facts the judge found supported" : "The model's statements, not judged (their quotes were found in the cited results)";
  parts.push(...list(factsTitle, content.verified_facts, (fact) => el("span", {}, shown(fact.statement), citationList(fact.citations))));
  parts.push(...list("Checked, nothing found", content.no_evidence));
  parts.push(...list("Not checked", content.not_checked));
  parts.push(...list("Missing information", content.missing_info));
  return parts;
}

// `text` with every occurrence of each excerpt wrapped in <mark>.
function highlighted(text, excerpts) {
  const ranges = [];
  for (const excerpt of excerpts) {
    if (!excerpt) continue;
    for (let at = text.indexOf(excerpt); at >= 0; at = text.indexOf(excerpt, at + excerpt.length)) {
      ranges.push([at, at + excerpt.length]);
    }
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const nodes = [];
  let done = 0;
  for (const [start, end] of ranges) {
    if (start < done) continue;
    nodes.push(text.slice(done, start), el("mark", {}, text.slice(start, end)));
    done = end;
  }
  nodes.push(text.slice(done));
  return nodes;
}

function excerptsOf(content) {
  const found = new Map();
  const add = (c) => found.set(c.reference, [...(found.get(c.reference) || []), c.excerpt]);
  for (const c of content?.citations || []) add(c);
  for (const fact of [...(content?.facts || []), ...(content?.verified_facts || [])]) {
    for (const c of fact.citations || []) add(c);
  }
  for (const o of content?.observations || []) add({ reference: o.reference, excerpt: o.record });
  return found;
}

// The evidence a run gathered: each tool result (and each cited passage), excerpts marked.
export function evidence(events, content) {
  const quoted = excerptsOf(content);
  const tools = new Map();
  for (const event of events) {
    const a = event.attributes || {};
    if (event.event_type === "TOOL_INVOCATION_STARTED") tools.set(event.stream_id, { tool: a.tool, scope: a.normalized_scope });
    if (event.event_type === "TOOL_INVOCATION_READY") {
      Object.assign(tools.get(event.stream_id) || {}, { content: a.content, status: a.evidence_status });
    }
  }
  const items = [];
  for (const [id, t] of tools) {
    if (t.content === undefined) continue;
    items.push(el(
      "article",
      { id: anchor(id), className: "evidence", tabIndex: -1 },
      el("h3", {}, `${t.tool} — ${t.status}`),
      el("p", { className: "scope" }, t.scope || ""),
      el("pre", {}, ...highlighted(t.content || "", quoted.get(id) || [])),
    ));
  }
  for (const passage of content?.passages || []) {
    const body = passage.text || passage.sentence || "";
    items.push(el(
      "article",
      { id: anchor(passage.id), className: "evidence", tabIndex: -1 },
      el("h3", {}, passage.title || passage.id),
      el("pre", {}, ...highlighted(body, quoted.get(passage.id) || [])),
    ));
  }
  return items.length ? items : [el("p", {}, "No tool results or passages.")];
}

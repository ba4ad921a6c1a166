// Follow a running run's event stream (GET /v1/runs/{id}/stream) with the tab's key.
// EventSource cannot send an Authorization header, so the stream is read with fetch and parsed
// here (WHATWG event-stream: `id:`, `event:`, `data:` lines, a blank line ends an event). After a
// dropped connection it resumes with Last-Event-ID, so no event is seen twice or missed.
import { storedKey } from "./api.js";

const RETRIES = 8;
const FINAL = new Set(["done", "failure"]);

function parse(block) {
  const event = { id: "", event: "message", data: "" };
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const at = line.indexOf(":");
    const name = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
    if (name === "id") event.id = value;
    else if (name === "event") event.event = value;
    else if (name === "data") event.data += event.data ? `\n${value}` : value;
  }
  return event;
}

// Read one connection to its end (cursor.last follows each event id); true when the stream ended.
async function readOnce(path, cursor, onEvent, onConnected) {
  const headers = { Accept: "text/event-stream" };
  const key = storedKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (cursor.last) headers["Last-Event-ID"] = cursor.last;
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  if (response.status === 204) return true; // nothing more, ever
  if (response.status >= 400 && response.status < 500 && response.status !== 429) return true;
  if (!response.ok) throw new Error(`HTTP ${response.status}`); // 429, 5xx: try again
  onConnected();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let ended = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = (buffer + value).replace(/\r\n|\r(?!$)/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const event = parse(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (!event.id && !event.data) continue; // a keep-alive comment
      if (event.id) cursor.last = event.id;
      ended = ended || FINAL.has(event.event);
      onEvent(event);
    }
  }
  if (!ended) throw new Error("the stream closed early");
  return true;
}

// Follow `runId`'s stream until it ends; `onEvent` gets each event once, in order.
// `onState` hears "following", "reconnecting" and "ended".
export async function follow(runId, onEvent, onState) {
  const path = `/v1/runs/${encodeURIComponent(runId)}/stream`;
  const cursor = { last: "" };
  for (let attempt = 0; attempt <= RETRIES; attempt += 1) {
    try {
      await readOnce(path, cursor, onEvent, () => onState("following"));
      break;
    } catch {
      // a dropped connection: try again from the last event seen, a little later each time
      onState("reconnecting");
      await new Promise((resume) => setTimeout(resume, 500 * (attempt + 1)));
    }
  }
  onState("ended");
}

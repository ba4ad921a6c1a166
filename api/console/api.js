// The console's one door to the service: the JSON API with the key typed in this tab.
// The key lives in sessionStorage (this tab only, gone when it closes) and is sent only in the
// Authorization header the API reads; it is never put in a URL.

const KEY = "harness.apiKey";

export function storedKey() {
  return sessionStorage.getItem(KEY) || "";
}

// Fetch a JSON route. Resolves to {ok, status, data} or {ok: false, status, message}, where the
// message says in words what went wrong and what to do. A read answered 202 is a run the service
// accepted that its read tables do not show yet: not an answer to draw, and not "no such run".
export function getJson(path, what) {
  return requestJson("GET", path, undefined, what);
}

// POST a JSON body; the same answer as getJson.
export function postJson(path, body, what) {
  return requestJson("POST", path, body, what);
}

async function requestJson(method, path, body, what) {
  const headers = { Accept: "application/json" };
  const key = storedKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, status: 0, message: `The service did not answer (${error.message}).` };
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    answer = null;
  }
  if (method === "GET" && response.status === 202) {
    return { ok: false, status: 202, message: notShownYet(what, response.headers.get("Retry-After")) };
  }
  if (response.ok) return { ok: true, status: response.status, data: answer };
  return { ok: false, status: response.status, message: explainFailure(response.status, answer, what) };
}

function notShownYet(what, retryAfter) {
  const seconds = /^[0-9]{1,4}$/.test(retryAfter || "") ? Number(retryAfter) : 1;
  const wait = seconds === 1 ? "a second" : `${seconds} seconds`;
  return `Not shown yet — refresh: the service has ${what}, but its read tables have not caught up with it. Refresh the page in ${wait}.`;
}

function explainFailure(status, body, what) {
  const detail = body && typeof body.detail === "string" ? ` The service said: ${body.detail}.` : "";
  if (status === 401) {
    const typed = storedKey() ? "The key in use was refused" : "This service needs an API key";
    return `${typed}: type your key in the API key box above.${detail}`;
  }
  if (status === 403) return `Your key may not do this: ${what}.${detail}`;
  if (status === 404) {
    return `There is no ${what} that you can see: it does not exist, or it belongs to another user.`;
  }
  if (status === 409) return `The service cannot ${what} right now: another request is doing it.${detail}`;
  if (status === 422) {
    const fields = body && Array.isArray(body.detail) ? body.detail.map((e) => `${(e.loc || []).slice(1).join(".")}: ${e.msg}`).join("; ") : "";
    return `The service refused the request for ${what}${fields ? ` (${fields})` : ""}.${detail}`;
  }
  if (status === 429 || status === 503) {
    return `The service is busy or its store is unavailable; try again shortly.${detail}`;
  }
  return `Reading ${what} failed with HTTP ${status}.${detail}`;
}

// Show a message (or hide it when text is empty) in the page's alert region.
export function say(text) {
  const message = document.getElementById("message");
  message.textContent = text;
  message.hidden = !text;
}

// Wire the header's key form: a key typed once is kept for this tab; `reload` reads again.
export function keyForm(reload) {
  const form = document.getElementById("key-form");
  const input = document.getElementById("key-input");
  const state = document.getElementById("key-state");
  const show = () => {
    state.textContent = storedKey() ? "key in use for this tab" : "no key";
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = input.value.trim();
    if (typed) sessionStorage.setItem(KEY, typed);
    input.value = "";
    show();
    reload();
  });
  document.getElementById("key-forget").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    show();
    reload();
  });
  show();
}

// A small element builder: el("td", {className: "x"}, "text", child, ...). Text is always text.
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name.startsWith("data-") || name.startsWith("aria-")) node.setAttribute(name, value);
    else node[name] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

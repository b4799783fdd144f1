// What every page shares: the JSON API with the stored token, the login form, small DOM helpers, and
// performance.mark('ready') once a page's data has rendered (benchmarks/web.py and the tests wait for it).

const TOKEN_KEY = "lineage-token";

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? String(body.detail) : `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

export function token() {
  return localStorage.getItem(TOKEN_KEY);
}

/** GET /api/v1{path}?{params}: the parsed JSON, or an ApiError with the API's message. */
export async function api(path, params = {}) {
  const url = new URL("/api/v1" + path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  const headers = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  const res = await fetch(url, { headers });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

/** h("a", {href: "/x", class: "k"}, "text", child...): an element; null/false children are skipped. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : n ?? "—");
export const pct = (x, digits = 1) => (typeof x === "number" ? (100 * x).toFixed(digits) + "%" : "—");
export const q = encodeURIComponent;

export const links = {
  release: (ref) => {
    const [name, tag] = ref.split("@");
    return `/releases/${q(name)}/${q(tag)}`;
  },
  sample: (id) => `/samples/${q(id)}`,
  dataset: (name) => `/datasets/${q(name)}`,
  run: (id) => `/runs/${q(id)}`,
  graph: (node) => `/graph?node=${q(node)}`,
};

/** A table; ``headers`` null: none (a key/value table). */
export function table(headers, rows, attrs = {}) {
  return h(
    "table",
    attrs,
    headers ? h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))) : null,
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))),
  );
}

export function section(title, ...body) {
  return h("section", {}, h("h2", {}, title), ...body);
}

/** Replace the children of ``out`` with ``nodes``, leaving out the null/false ones (optional sections). */
export function fill(out, ...nodes) {
  out.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}

export function main() {
  return document.getElementById("main");
}

function showLogin(message) {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", placeholder: "token" });
  const form = h(
    "form",
    {
      id: "login",
      onsubmit: (ev) => {
        ev.preventDefault();
        localStorage.setItem(TOKEN_KEY, input.value.trim());
        location.reload();
      },
    },
    h("h1", {}, "Log in"),
    h("p", { class: "refused", id: "refused" }, message),
    h("p", {}, "Paste a token from ", h("code", {}, "lineage token create NAME --role reader"), "."),
    input,
    h("button", { type: "submit" }, "log in"),
  );
  main().replaceChildren(form);
  performance.mark("ready");
}

/** Run a page: render(main) with the API, then mark 'ready'. Refusals show the login form; other errors
 * show their message (and are no console errors: a missing thing is an answer, not a fault). */
export async function page(render) {
  const out = main();
  const logout = document.getElementById("logout");
  if (token()) {
    logout.hidden = false;
    logout.addEventListener("click", () => {
      localStorage.removeItem(TOKEN_KEY);
      location.reload();
    });
  }
  const box = document.getElementById("search-box");
  const here = new URLSearchParams(location.search).get("q");
  if (box && here) box.value = here;
  try {
    const health = await api("/health");
    if (!token() && health.auth_required) {
      showLogin("This server needs a token: none is stored in this browser.");
      return;
    }
    await render(out, health);
    performance.mark("ready");
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      showLogin(`Refused (${err.status}): ${err.message}`);
      return;
    }
    out.replaceChildren(h("p", { class: "error", id: "error" }, err.message || String(err)));
    performance.mark("ready");
  }
}

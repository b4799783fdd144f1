// The lineage graph: the GET /lineage neighbourhood of one node (one hop by default), laid out in
// columns (upstream left, downstream right). Each node shows its upstream/downstream counts; "+" loads
// that node's own neighbourhood and merges it (never the whole graph). "as of" re-asks at a date.
import { api, fill, h, links, page } from "./common.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 220, H = 46, GAP_X = 90, GAP_Y = 18;

function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function label(node) {
  const d = node.data || {};
  // a run: its pipeline and the start of its id (a whole UUID does not fit the box)
  const name = node.type === "RUN" && d.facets?.pipeline ? `${d.facets.pipeline} ${d.name.slice(0, 8)}` : d.name || node.id;
  return name.length > 30 ? "…" + name.slice(-29) : name;
}

// what each node type is called on the page (its colour: web.css, .node.<type>)
const KIND = {
  DATASET: "dataset", JOB: "job", VERSION: "version", RUN: "run", RELEASE: "release",
  EXPORT: "export", MODEL: "training job", EVALSET: "eval set", EVALSET_VERSION: "eval set version",
};

function kindLabel(node) {
  const state = node.type === "RELEASE" && node.data?.facets?.state;
  return (KIND[node.type] || node.type.toLowerCase()) + (state && state !== "published" ? ` (${state})` : "");
}

function nodeHref(node, namespace) {
  const d = node.data || {};
  const f = d.facets || {};
  const ours = d.namespace === namespace;
  if (node.type === "DATASET" && ours) return links.dataset(d.name);
  if (node.type === "JOB" && d.latestRunId && ours) return links.run(d.latestRunId);
  if (node.type === "VERSION" && f.dataset) return links.dataset(f.dataset);
  if (node.type === "RUN") return links.run(d.latestRunId || d.name);
  if (node.type === "RELEASE") return links.release(d.name);
  if (node.type === "EXPORT" && f.release) return links.release(f.release);
  return links.graph(node.id);
}

class Graph {
  constructor(root, namespace) {
    this.root = root;
    this.namespace = namespace;
    this.nodes = new Map(); // id -> node (as the API sent it, edges merged)
    this.edges = new Set(); // "origin\u0000destination"
    this.expanded = new Set();
  }

  merge(answer) {
    for (const n of answer.graph) {
      const have = this.nodes.get(n.id);
      if (!have) this.nodes.set(n.id, { ...n });
      else Object.assign(have, { upstream: n.upstream, downstream: n.downstream, data: n.data });
      for (const e of [...n.inEdges, ...n.outEdges]) this.edges.add(e.origin + "\u0000" + e.destination);
    }
  }

  /** Loaded neighbours of each node on each side: {in: Map(id -> n), out: Map(id -> n)}, one pass. */
  degrees() {
    const ins = new Map(), outs = new Map();
    for (const e of this.edges) {
      const [o, d] = e.split("\u0000");
      if (!this.nodes.has(o) || !this.nodes.has(d)) continue;
      outs.set(o, (outs.get(o) || 0) + 1);
      ins.set(d, (ins.get(d) || 0) + 1);
    }
    return { ins, outs };
  }

  /** Column of each node: the root at 0, a node's downstream one to the right, upstream one to the left. */
  columns() {
    const col = new Map([[this.root, 0]]);
    const queue = [this.root];
    const next = new Map(); // id -> [[neighbour, +1 downstream | -1 upstream]]
    for (const e of this.edges) {
      const [o, d] = e.split("\u0000");
      if (!this.nodes.has(o) || !this.nodes.has(d)) continue;
      if (!next.has(o)) next.set(o, []);
      if (!next.has(d)) next.set(d, []);
      next.get(o).push([d, 1]);
      next.get(d).push([o, -1]);
    }
    for (let i = 0; i < queue.length; i++) {
      const cur = queue[i];
      for (const [other, step] of next.get(cur) || []) {
        if (!col.has(other)) { col.set(other, col.get(cur) + step); queue.push(other); }
      }
    }
    return col;
  }

  render(svgBox, onExpand) {
    const col = this.columns();
    const deg = this.degrees();
    const byCol = new Map();
    for (const [id, c] of col) {
      if (!byCol.has(c)) byCol.set(c, []);
      byCol.get(c).push(id);
    }
    const cols = [...byCol.keys()].sort((a, b) => a - b);
    const min = cols[0];
    const pos = new Map();
    let height = 0;
    for (const c of cols) {
      const ids = byCol.get(c).sort();
      ids.forEach((id, i) => pos.set(id, { x: 20 + (c - min) * (W + GAP_X), y: 20 + i * (H + GAP_Y) }));
      height = Math.max(height, 20 + ids.length * (H + GAP_Y));
    }
    const width = 40 + cols.length * (W + GAP_X) - GAP_X;
    const svg = s("svg", { id: "graph", width, height: Math.max(height, 100), viewBox: `0 0 ${width} ${Math.max(height, 100)}` });
    const arrow = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    arrow.append(s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
    svg.append(s("defs", {}, arrow));
    for (const e of this.edges) {
      const [o, d] = e.split("\u0000");
      const a = pos.get(o), b = pos.get(d);
      if (!a || !b) continue;
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      svg.append(s("path", { class: "edge", d: `M${x1},${y1} C${x1 + 40},${y1} ${x2 - 40},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)" }));
    }
    for (const [id, p] of pos) {
      const n = this.nodes.get(id);
      const missing = n.upstream - (deg.ins.get(id) || 0) + n.downstream - (deg.outs.get(id) || 0);
      const g = s("g", { class: `node ${n.type.toLowerCase()}${id === this.root ? " root" : ""}`, "data-id": id, transform: `translate(${p.x},${p.y})` });
      g.append(s("rect", { width: W, height: H, rx: 6 }));
      const a = s("a", { href: nodeHref(n, this.namespace), class: "node-link" });
      a.append(s("text", { x: 8, y: 18, class: "name" }, label(n)));
      g.append(a);
      g.append(s("text", { x: 8, y: 36, class: "counts" }, `${kindLabel(n)} · ↑${n.upstream} ↓${n.downstream}`));
      if (missing > 0 && !this.expanded.has(id)) {
        const btn = s("g", { class: "expand", "data-id": id, onclick: () => onExpand(id) });
        btn.append(s("rect", { x: W - 28, y: 8, width: 22, height: 22, rx: 4 }));
        btn.append(s("text", { x: W - 17, y: 24, "text-anchor": "middle" }, "+"));
        btn.append(s("title", {}, `load ${missing} more neighbour(s)`));
        g.append(btn);
      }
      svg.append(g);
    }
    svgBox.replaceChildren(svg);
  }
}

function asOfParam(value) {
  // a datetime-local value is the browser's local time: sent as UTC
  return value ? new Date(value).toISOString() : undefined;
}

page(async (out, health) => {
  const params = new URLSearchParams(location.search);
  let root = params.get("node");
  if (!root) {
    const datasets = await api("/datasets", { limit: 1 });
    if (!datasets.items.length) {
      fill(out, h("h1", {}, "Lineage graph"), h("p", {}, "The catalog has no dataset yet."));
      return;
    }
    root = `dataset:${health.namespace}:${datasets.items[0].name}`;
  }
  const depth = h("select", { id: "depth" }, [0, 1, 2, 3, 4, 5].map((k) => h("option", { value: k }, k)));
  depth.value = params.get("depth") || "1";
  const asOf = h("input", { id: "as-of", type: "datetime-local", step: 1 });
  if (params.get("asOf")) {
    const t = new Date(params.get("asOf"));
    asOf.value = new Date(t.getTime() - t.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  }
  const status = h("p", { id: "graph-status", class: "detail" });
  const box = h("div", { id: "graph-box" });
  fill(out, 
    h("h1", {}, "Lineage graph"),
    h("p", {}, "around ", h("code", { id: "root" }, root)),
    h("form", { id: "graph-controls", class: "controls", onsubmit: (e) => e.preventDefault() },
      h("label", {}, "depth ", depth), " ",
      h("label", {}, "as of ", asOf), " ",
      h("button", { type: "button", id: "as-of-now", onclick: () => { asOf.value = ""; reload(); } }, "now")),
    status,
    box,
  );
  let graph;
  async function load() {
    graph = new Graph(root, health.namespace);
    graph.merge(await api("/lineage", { nodeId: root, depth: depth.value, asOf: asOfParam(asOf.value) }));
    draw();
  }
  function draw() {
    graph.render(box, expand);
    status.textContent = `${graph.nodes.size} nodes loaded` + (asOf.value ? ` · as of ${asOfParam(asOf.value)}` : "");
  }
  async function expand(id) {
    graph.merge(await api("/lineage", { nodeId: id, depth: 1, asOf: asOfParam(asOf.value) }));
    graph.expanded.add(id);
    draw();
    performance.mark("expanded");
  }
  async function reload() {
    const url = new URL(location.href);
    url.searchParams.set("node", root);
    url.searchParams.set("depth", depth.value);
    if (asOf.value) url.searchParams.set("asOf", asOfParam(asOf.value));
    else url.searchParams.delete("asOf");
    history.replaceState(null, "", url);
    try {
      await load();
    } catch (err) {
      box.replaceChildren(h("p", { class: "error", id: "error" }, err.message));
      status.textContent = "";
    }
    performance.mark("reloaded");
  }
  depth.addEventListener("change", reload);
  asOf.addEventListener("change", reload);
  await load();
});

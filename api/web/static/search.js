// The search page: one box for names and ids; hits grouped by kind, each a link to its page.
import { api, fill, h, links, page } from "./common.js";

const TITLES = {
  dataset: "Datasets",
  release: "Releases",
  run: "Runs",
  sample: "Samples",
  source: "Sources",
  evalset: "Eval sets",
};

function href(hit) {
  switch (hit.kind) {
    case "dataset":
      return links.dataset(hit.id);
    case "release":
      return links.release(hit.id);
    case "run":
      return links.run(hit.id);
    case "sample":
      return links.sample(hit.id);
    case "source": // a graph node, or a file inside a folder (no page of its own: its releases are the detail)
      return hit.id.startsWith("dataset:") ? links.graph(hit.id) : null;
    default:
      return `/?q=${encodeURIComponent(hit.id)}`;
  }
}

page(async (out) => {
  const text = new URLSearchParams(location.search).get("q");
  if (!text) {
    const datasets = await api("/datasets", { limit: 50 });
    const releases = await api("/releases", { limit: 50 });
    fill(out, 
      h("h1", {}, "Search"),
      h("p", {}, "Type a dataset or release name, a run id, a sample id, a source URI or an eval set above."),
      h("section", { id: "datasets" }, h("h2", {}, "Datasets"),
        h("ul", {}, datasets.items.map((d) => h("li", {}, h("a", { href: links.dataset(d.name) }, d.name), ` (${d.version_count} versions)`)))),
      h("section", { id: "releases" }, h("h2", {}, "Releases"),
        h("ul", {}, releases.items.map((r) => h("li", {}, h("a", { href: links.release(r.ref) }, r.ref), ` ${r.state}`)))),
    );
    return;
  }
  const found = await api("/search", { q: text });
  const groups = found.groups.map((g) =>
    h(
      "section",
      { class: "hits", dataset: { kind: g.kind } },
      h("h2", {}, `${TITLES[g.kind] || g.kind} (${g.total})`),
      h("ul", {}, g.hits.map((hit) => h("li", {}, href(hit) ? h("a", { href: href(hit), class: "hit" }, hit.label) : h("span", { class: "hit" }, hit.label), hit.detail ? h("span", { class: "detail" }, " " + hit.detail) : null))),
    ),
  );
  fill(out, 
    h("h1", {}, `Search: ${found.query}`),
    ...(groups.length ? groups : [h("p", { id: "no-hits" }, "Nothing matches.")]),
  );
});

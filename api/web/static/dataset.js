// The dataset page: its metadata, versions with theirs, the runs that made them, and the releases of each.
import { api, fill, fmt, h, links, page, section, table } from "./common.js";

page(async (out, health) => {
  const name = decodeURIComponent(location.pathname.split("/")[2]);
  const path = `/datasets/${encodeURIComponent(name)}`;
  const [ds, versions, runs] = await Promise.all([
    api(path),
    api(path + "/versions", { limit: 1000 }),
    api("/runs", { dataset: name, limit: 100 }),
  ]);
  fill(out, 
    h("h1", {}, "Dataset ", h("span", { id: "dataset-name" }, ds.name)),
    table(null, [
      ["description", ds.description || "—"],
      ["owner", ds.owner || "—"],
      ["licence", ds.license || "—"],
      ["tags", (ds.tags || []).join(", ") || "—"],
      ["lineage", h("a", { href: links.graph(`dataset:${health.namespace}:${ds.name}`), id: "graph-link" }, "graph")],
    ], { class: "kv" }),
    section("Versions", table(["version", "rows", "bytes", "quarantined", "Delta", "created", "run", "releases"],
      versions.items.map((v) => [
        `v${v.version}`, fmt(v.row_count), fmt(v.bytes), fmt(v.quarantine_count), `${v.data_path} @ ${v.data_delta_version}`,
        v.created_at, h("a", { href: links.run(v.run_id) }, v.run_id.slice(0, 8)),
        v.releases.length ? v.releases.map((r) => h("a", { href: links.release(r), class: "release" }, r + " ")) : "—",
      ]), { id: "versions" })),
    section("Runs", table(["run", "pipeline", "engine", "status", "started", "ended"],
      runs.items.map((r) => [h("a", { href: links.run(r.id) }, r.id), r.pipeline, r.engine, r.status, r.started_at, r.ended_at || "—"]), { id: "runs" })),
  );
});

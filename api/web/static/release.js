// The release page: manifest summary, funnel and QC charts (the QC report's own rendering), gate results
// and override, replicas per tier, the training jobs that read it, and the diff against the previous
// release of the same name.
import { api, fill, fmt, h, links, page, section, table } from "./common.js";
import { renderDiff, renderQc } from "./qc_report.js";

page(async (out) => {
  const [, , name, tag] = location.pathname.split("/").map(decodeURIComponent);
  const ref = `${name}@${tag}`;
  const path = `/releases/${encodeURIComponent(name)}/${encodeURIComponent(tag)}`;
  const [release, manifest, quality, replicas, reads, siblings] = await Promise.all([
    api(path),
    api(path + "/manifest"),
    api(path + "/quality"),
    api(path + "/replicas"),
    api(path + "/reads", { limit: 100 }),
    api("/releases", { name, limit: 1000 }),
  ]);
  const earlier = siblings.items
    .filter((r) => r.ref !== ref && r.state !== "draft" && r.published_at < release.published_at)
    .sort((a, b) => (a.published_at < b.published_at ? 1 : -1));
  const previous = earlier[0];
  const summary = table(null, [
    ["state", release.state + (release.deprecation_reason ? ` (${release.deprecation_reason})` : "")],
    ["content digest", h("code", { id: "digest" }, release.content_digest)],
    ["dataset version", h("a", { href: links.dataset(manifest.dataset) }, `${manifest.dataset}:v${manifest.dataset_version}`)],
    ["data table", `${manifest.tier}: ${manifest.data.table} @ Delta version ${manifest.data.delta_version}`],
    ["files", fmt(manifest.files.length)],
    ["rows", fmt(manifest.row_count)],
    ["bytes", fmt(manifest.bytes)],
    ["run", manifest.run_id ? h("a", { href: links.run(manifest.run_id) }, manifest.run_id) : "—"],
    ["published", `${release.published_at} by ${release.created_by}`],
  ], { id: "summary", class: "kv" });

  const run = manifest.run_id ? await api(`/runs/${encodeURIComponent(manifest.run_id)}`) : null;
  const qc = h("div", { id: "qc" });
  if (quality.report) {
    renderQc(qc, {
      operators: run ? run.operators : [],
      ref,
      report: quality.report,
      gate: quality.gate,
      contamination: manifest.contamination,
      steps: quality.steps,
      quarantine: quality.quarantine,
    });
  } else {
    qc.append(h("p", {}, "This release was published before QC reports."));
  }

  const replicaRows = replicas.map((r) => [r.tier, r.state, r.primary ? "primary" : "copy", fmt(r.file_count), r.verified_at || "—"]);
  const readRows = reads.items.map((r) => [r.job, r.rank ?? "—", r.world_size ?? "—", r.host || "—", r.opened_at || "—"]);
  // the diff reads both versions' tables (a full join at 10M samples): drawn when it comes, after 'ready'
  const diffPart = h("div", { id: "diff" }, previous ? "computing the diff…" : `no earlier release named ${name}`);
  if (previous) {
    api("/diff", { base: previous.ref, target: ref })
      .then((diff) => renderDiff(diffPart, previous.ref, diff, links.release(previous.ref)))
      .catch((err) => fill(diffPart, h("p", { class: "error" }, err.message)))
      .finally(() => performance.mark("diff"));
  } else {
    performance.mark("diff");
  }

  fill(out, 
    h("h1", {}, "Release ", h("span", { id: "ref" }, ref)),
    section("Manifest", summary),
    section("Quality", qc),
    section("Replicas", table(["tier", "state", "role", "files", "verified"], replicaRows, { id: "replicas" })),
    section("Training jobs that read it", readRows.length ? table(["job", "rank", "world size", "host", "when"], readRows, { id: "reads" }) : h("p", { id: "reads" }, "none recorded")),
    section("Diff with the previous release", diffPart),
  );
});

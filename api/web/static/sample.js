// The sample page: its whole lineage in order (source file, row and byte offset; each operator's verdict
// with the rule values and thresholds), its duplicate cluster and kept sample, the releases holding it,
// and "why not in release X".
import { api, fill, fmt, h, links, page, section, table } from "./common.js";

function rules(detail) {
  const list = (detail && detail.rules) || [];
  if (!list.length) return detail && Object.keys(detail).length ? h("code", {}, JSON.stringify(detail)) : "";
  return table(["rule", "value", "", "threshold", ""], list.map((r) => [
    `${r.rule_set}:${r.rule}`,
    r.value === null ? "—" : Number(r.value).toPrecision(4),
    r.comparison,
    Number(r.threshold).toPrecision(4),
    h("span", { class: r.passed ? "pass" : "fail" }, r.passed ? "pass" : "FAIL"),
  ]), { class: "rules" });
}

function duplicate(d) {
  if (!d) return null;
  return table(null, [
    ["method", d.method || "—"],
    ["cluster", d.cluster_id || "—"],
    ["cluster size", fmt(d.cluster_size)],
    ["kept sample", d.kept_id ? h("a", { href: links.sample(d.kept_id), id: "kept-sample" }, d.kept_id) : "—"],
    ["Jaccard", d.jaccard === null || d.jaccard === undefined ? "—" : d.jaccard.toFixed(3)],
  ], { class: "kv duplicate" });
}

page(async (out) => {
  const id = decodeURIComponent(location.pathname.split("/")[2]);
  const lineage = await api(`/samples/${encodeURIComponent(id)}/lineage`);
  if (!lineage.found) {
    fill(out, h("h1", {}, "Sample ", h("code", {}, id)), h("p", { id: "not-found" }, "No dataset version of this catalog has this sample."));
    return;
  }
  const src = lineage.source || {};
  const releases = [...new Set(lineage.versions.filter((v) => v.in_output).flatMap((v) => v.releases))];
  const all = await api("/releases", { limit: 1000 });
  const others = all.items.filter((r) => !releases.includes(r.ref) && r.state !== "draft").map((r) => r.ref);
  const whyBox = h("div", { id: "why-not-answer" });
  const pick = h("select", { id: "why-not-release" }, others.map((r) => h("option", { value: r }, r)));
  async function ask() {
    if (!pick.value) return;
    const why = await api(`/samples/${encodeURIComponent(id)}/why-not`, { release: pick.value });
    whyBox.replaceChildren(h("p", { class: "why" }, why.explanation));
    performance.mark("why-not");
  }
  const versions = lineage.versions.map((v) =>
    h("section", { class: "version" },
      h("h3", {}, h("a", { href: links.dataset(v.dataset) }, `${v.dataset}:v${v.version}`), " ",
        h("span", { class: v.in_output ? "pass" : "fail" }, v.in_output ? "in the output" : "not in the output"),
        " · run ", h("a", { href: links.run(v.run_id) }, v.run_id.slice(0, 8)),
        v.releases.length ? [" · releases: ", v.releases.map((r) => h("a", { href: links.release(r) }, r + " "))] : null),
      table(["step", "operator", "verdict", "reason", "rule values and thresholds"], v.records.map((r) => [
        r.step, `${r.operator}@${r.operator_version}`, h("span", { class: `verdict ${r.verdict}` }, r.verdict), r.reason || "", rules(r.step === 0 ? null : r.detail),
      ]), { class: "records" }),
    ),
  );
  fill(out, 
    h("h1", {}, "Sample ", h("code", { id: "sample-id" }, lineage.sample_id)),
    section("Source", table(null, [
      ["dataset", src.dataset ?? "—"],
      ["file", h("span", { id: "source-uri" }, src.uri ?? src.path ?? "—")],
      ["row", fmt(src.row)],
      ["byte offset", fmt(src.offset)],
    ], { class: "kv", id: "source" })),
    lineage.duplicate ? section("Duplicate cluster", duplicate(lineage.duplicate)) : null,
    section("Releases containing it", releases.length
      ? h("ul", { id: "releases" }, releases.map((r) => h("li", {}, h("a", { href: links.release(r) }, r))))
      : h("p", { id: "releases" }, "none")),
    section("Lineage, version by version", h("div", { id: "versions" }, versions)),
    others.length
      ? section("Why not in a release?", h("p", {}, pick, " ", h("button", { type: "button", id: "why-not-ask", onclick: ask }, "ask")), whyBox)
      : null,
  );
});

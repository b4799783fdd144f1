// The QC report's one rendering: the standalone HTML report (lineage.releases.qc.report_html inlines this
// file) and the web view's release page (which imports it) both call renderQc(root, data).
//
// Every chart is a horizontal bar chart: one row per bar, its label left of it on its own line, so axis
// labels cannot overlap whatever their number or length (a long label is cut with "…", the full text in
// a tooltip); a bar of a non-zero value is at least MIN_BAR pixels wide, so small counts stay visible.
// data: {ref, report (its mixture too, when the release has one), gate?, contamination?, steps?, quarantine?,
// manifest?: {content_digest, dataset, dataset_version, delta_version, table}, operators?: [{name, params}]
// (the run's: each rule's threshold), previous?: {ref, diff} (the comparison with the previous release of
// the same name)}

const SVG_NS = "http://www.w3.org/2000/svg";
export const MIN_BAR = 3;
const ROW = 22, LABEL_W = 170, BAR_W = 360, VALUE_W = 90, PAD = 8;

function el(ns, tag, attrs = {}, text) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const num = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? "—"));

function fit(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** A horizontal bar chart: bars [{label, value, text?}], values scaled to the largest. */
export function barChart(title, bars, format = num) {
  const height = PAD * 2 + 24 + bars.length * ROW;
  const width = LABEL_W + BAR_W + VALUE_W;
  const svg = el(SVG_NS, "svg", { class: "qc-chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(el(SVG_NS, "text", { x: 0, y: 16, class: "qc-title" }, title));
  const top = Math.max(0, ...bars.map((b) => b.value)) || 1;
  bars.forEach((b, i) => {
    const y = PAD + 24 + i * ROW;
    const label = el(SVG_NS, "text", { x: LABEL_W - 6, y: y + ROW * 0.68, "text-anchor": "end", class: "qc-label" }, fit(b.label, 26));
    label.append(el(SVG_NS, "title", {}, b.label));
    svg.append(label);
    let w = (BAR_W * b.value) / top;
    if (b.value > 0 && w < MIN_BAR) w = MIN_BAR;
    svg.append(el(SVG_NS, "rect", { x: LABEL_W, y: y + 3, width: w.toFixed(1), height: ROW - 6, class: "qc-bar", "data-value": b.value }));
    svg.append(el(SVG_NS, "text", { x: LABEL_W + w + 4, y: y + ROW * 0.68, class: "qc-value" }, b.text ?? format(b.value)));
  });
  return svg;
}

function table(headers, rows, cls) {
  const t = el(null, "table", { class: cls || "" });
  const head = el(null, "tr");
  headers.forEach((x) => head.append(el(null, "th", {}, x)));
  if (headers.some((x) => x)) t.append(head);
  for (const r of rows) {
    const tr = el(null, "tr");
    r.forEach((c) => tr.append(el(null, "td", {}, String(c))));
    t.append(tr);
  }
  return t;
}

function h2(text) {
  return el(null, "h2", {}, text);
}

const pct = (x, d = 1) => (100 * x).toFixed(d) + "%";

export function renderQc(root, data) {
  const r = data.report;
  const parts = [];
  const m = data.manifest;
  if (m) {
    parts.push(table(["", ""], [
      ["content digest", m.content_digest],
      ["dataset version", `${m.dataset}:v${m.dataset_version}`],
      ["Delta table", `${m.table} @ version ${m.delta_version}`],
    ], "qc-summary"));
  }
  parts.push(el(null, "p", { class: "qc-headline" },
    `${num(r.samples)} samples; exact-duplicate rate ${pct(r.exact_duplicate_rate, 3)}; ` +
    `rule sets applied: ${(r.rule_sets || []).join(", ") || "none"}`));
  const charts = el(null, "div", { class: "qc-charts" });
  if (data.steps && data.steps.length) {
    charts.append(barChart("Samples after each step (funnel)",
      data.steps.map((s) => ({ label: `${s.step} ${s.operator}`, value: s.kept, text: `${num(s.kept)} (−${num(s.dropped)})` }))));
  }
  const binLabel = (b) => (b.to === null || b.to === undefined ? `${num(b.from)}+` : `${num(b.from)}–${num(b.to)}`);
  charts.append(barChart("Text length (characters)", r.length_histogram.map((b) => ({ label: binLabel(b), value: b.count }))));
  charts.append(barChart("Letters by script (%)", Object.entries(r.scripts).map(([k, v]) => ({ label: k, value: 100 * v, text: (100 * v).toFixed(1) }))));
  charts.append(barChart("Drop rate per source (%)", r.sources.map((s) => ({ label: s.source, value: 100 * s.drop_rate, text: (100 * s.drop_rate).toFixed(1) }))));
  parts.push(charts);
  if (data.steps && data.steps.length) {
    parts.push(h2("Steps"), table(["step", "operator", "in", "kept", "dropped", "modified", "reasons"],
      data.steps.map((s) => [s.step, s.operator, num(s.in), num(s.kept), num(s.dropped), num(s.modified),
        Object.entries(s.reasons || {}).map(([k, v]) => `${k}: ${num(v)}`).join(", ")]), "qc-steps"));
  }
  const quarantine = Object.entries(data.quarantine || {});
  parts.push(h2("Quarantine"), quarantine.length
    ? table(["reason", "records"], quarantine.map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : num(v)]), "qc-quarantine")
    : el(null, "p", {}, "nothing quarantined"));
  parts.push(h2("Rules"), table(["operator", "rule", "threshold", "dropped", "modified", "failed"],
    r.rules.map((x) => [x.operator, x.rule, threshold(data.operators, x), num(x.dropped), num(x.modified), num(x.failed)]), "qc-rules"));
  parts.push(h2("Sources"), table(["source", "kept", "dropped", "drop rate"],
    r.sources.map((s) => [s.source, num(s.kept), num(s.dropped), pct(s.drop_rate, 2)]), "qc-sources"));
  const mix = r.mixture;
  if (mix) {  // requested against achieved per source, in the mixture's unit
    const total = mix.total === null || mix.total === undefined ? "everything at these shares" : num(Math.round(mix.total));
    parts.push(h2("Mixture"), el(null, "p", { class: "qc-mixture-head" }, `by ${mix.unit}, seed ${mix.seed}, total ${total}`),
      table(["source", "weight", "requested share", "target", "available", "selected", "served", "achieved share", "epochs"],
        mix.sources.map((s) => [s.source, s.weight, pct(s.requested_share, 2), num(Math.round(s.target)), num(Math.round(s.available)),
          num(Math.round(s.selected)), num(Math.round(s.served)), pct(s.achieved_share, 2), s.epochs.toFixed(3)]), "qc-mixture"));
  }
  const gate = data.gate;
  if (gate) {
    const rows = (gate.results || []).map((g) => [g.condition, g.measured, g.limit, g.passed ? "pass" : "FAIL"]);
    parts.push(h2("Publish gate"), table(["condition", "measured", "limit", "result"], rows, "qc-gate"));
    if (gate.override) {
      const o = gate.override;
      parts.push(el(null, "p", { class: "qc-override" }, `overridden by ${o.by} at ${o.at}: ${o.reason}`));
    }
  }
  const c = data.contamination;
  if (c && Object.keys(c.evalsets || {}).length) {
    parts.push(h2("Contamination"), el(null, "p", {}, `${num(c.checked_samples)} samples checked for the n-grams of eval items (${JSON.stringify(c.ngrams || {})}, exact)`),
      table(["eval set", "contaminated items", "share", "samples", "items (first 20)"],
        Object.entries(c.evalsets).sort().map(([ref, e]) => [ref, `${num(e.contaminated_items)} of ${num(e.items)}`, pct(e.share, 2), num(e.samples),
          Object.keys(e.item_samples || {}).sort().slice(0, 20).join(", ")]), "qc-contamination"));
  }
  if (data.previous) {
    const box = el(null, "div", { class: "qc-diff" });
    renderDiff(box, data.previous.ref, data.previous.diff);
    parts.push(h2("Compared with the previous release"), box);
  }
  root.replaceChildren(...parts);
}

/** A rule's threshold: the parameter of its operator named as the rule ("quality:min_words" -> min_words,
 * "quality:duplicate_line_fraction" -> max_duplicate_line_fraction); "—" where no parameter is so named. */
function threshold(operators, rule) {
  const op = (operators || []).find((o) => o.name === rule.operator);
  const param = rule.rule.includes(":") ? rule.rule.split(":").slice(1).join(":") : rule.rule;
  const params = (op && op.params) || {};
  const value = [param, `max_${param}`, `min_${param}`].map((k) => params[k]).find((v) => v !== undefined && v !== null);
  return value === undefined ? "—" : String(value);
}

/** The diff with the previous release of the same name: samples per source and schema changes. ``href``: a
 * link for the previous release's name (the web page's), or none (the standalone report). */
export function renderDiff(root, previousRef, diff, href) {
  const name = href ? el(null, "a", { href }, previousRef) : el(null, "span", {}, previousRef);
  const head = el(null, "p", { class: "qc-diff-head" });
  head.append("against ", name, `: +${num(diff.added)} −${num(diff.removed)} changed ${num(diff.changed)}`);
  const parts = [head, table(["source", "added", "removed", "changed"],
    diff.sources.map((s) => [s.source, num(s.added), num(s.removed), num(s.changed)]), "qc-diff-sources")];
  parts.push(diff.schema_changes.length
    ? table(["field", "change", "before", "after"], diff.schema_changes.map((c) => [c.field, c.change,
      c.before ? c.before.type : "—", c.after ? c.after.type : "—"]), "qc-diff-schema")
    : el(null, "p", {}, "schema unchanged"));
  root.replaceChildren(...parts);
}

// The run page (a job node of the graph): what ran, on what, with which operators and parameters.
import { api, fill, fmt, h, links, page, section, table } from "./common.js";

page(async (out, health) => {
  const id = decodeURIComponent(location.pathname.split("/")[2]);
  const run = await api(`/runs/${encodeURIComponent(id)}`);
  const steps = (run.counts && run.counts.steps) || [];
  fill(out, 
    h("h1", {}, "Run ", h("code", { id: "run-id" }, run.id)),
    table(null, [
      ["pipeline", h("a", { href: links.graph(`job:${health.namespace}:${run.pipeline}`) }, run.pipeline)],
      ["output", h("a", { href: links.dataset(run.output_dataset) }, run.output_dataset)],
      ["engine", run.engine],
      ["status", run.status + (run.error ? `: ${run.error}` : "")],
      ["started", run.started_at],
      ["ended", run.ended_at || "—"],
      ["code version", run.code_version],
    ], { class: "kv" }),
    section("Inputs", table(["kind", "dataset", "version / files", "uri"],
      run.inputs.map((i) => [i.kind, i.dataset ? h("a", { href: links.dataset(i.dataset) }, i.dataset) : "—", i.version ?? i.files ?? "—", i.uri || "—"]))),
    section("Operators and their thresholds", table(["operator", "version", "parameters"],
      run.operators.map((o) => [o.name, o.version, h("code", {}, JSON.stringify(o.params))]), { id: "operators" })),
    section("Steps", table(["step", "operator", "in", "kept", "dropped", "modified"],
      steps.map((s) => [s.step, s.operator, fmt(s.in), fmt(s.kept), fmt(s.dropped), fmt(s.modified)]))),
  );
});

"""Every operation of lineage-ledger and where it is on each surface: one row per operation.

The rule (issue #17, item 1): the service owns every operation that reads or changes the catalog, and
each is on all three surfaces, a CLI verb, an HTTP endpoint and an SDK method, all thin callers of one
:class:`~lineage.service.core.Service` method. Operations that read or write data on the tiers run
in-process only (the CLI and the in-process SDK); ``serve`` and ``demo`` are CLI verbs of their own,
and ``health`` is about a server. ``tests/lineage/service/test_three_surfaces.py`` reads the real
surfaces (the FastAPI app's routes and operationIds, ``lineage.Client``'s methods, the verbs of the
app ``lineage.cli.main.build_app()`` builds) and fails when one lacks an operation this table and
these rules give it, or when the table names something that does not exist.

Names: an operation's SDK method is its HTTP ``operationId`` (and its route function's name); the
service method is the same name unless the row says otherwise. A CLI verb is written as typed after
``lineage`` (``"release show"``); one verb may show several operations (``release show`` prints the
release, its manifest and its replicas).

This module is data only: it imports nothing of the surfaces it describes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    CATALOG = "catalog"  # reads or changes the catalog: CLI verb, HTTP endpoint, SDK method
    TIER = "tier"  # reads or writes data on the tiers: CLI verb and in-process SDK method, no endpoint
    SERVER = "server"  # about a server or the whole path: only the surfaces its row names


@dataclass(frozen=True)
class Http:
    """An endpoint: method and path template under ``/api/v1``, as in the OpenAPI document."""

    method: str
    path: str


@dataclass(frozen=True)
class InProcess:
    """No endpoint, and why."""

    reason: str


@dataclass(frozen=True)
class Operation:
    name: str  # the SDK method and operationId (or, with no SDK method, the CLI verb's name)
    kind: Kind
    http: Http | InProcess
    cli: str | None  # the verb, e.g. "release show"; None only for a SERVER operation
    service: str | None = None  # the Service method when it is not ``name``; "" for none (SERVER only)
    sdk: bool = True  # the SDK has a method ``name`` (False only for a SERVER operation)

    @property
    def service_method(self) -> str | None:
        if self.service == "":
            return None
        return self.service or self.name


TIER_DATA = InProcess("reads or writes data on the tiers: runs where the data is, never inside the API server")

OPERATIONS: tuple[Operation, ...] = (
    # -- datasets ----------------------------------------------------------------------------
    Operation("list_datasets", Kind.CATALOG, Http("GET", "/datasets"), "datasets"),
    Operation("get_dataset", Kind.CATALOG, Http("GET", "/datasets/{name}"), "datasets"),
    Operation("update_dataset", Kind.CATALOG, Http("PATCH", "/datasets/{name}"), "dataset update"),
    Operation("list_versions", Kind.CATALOG, Http("GET", "/datasets/{name}/versions"), "datasets"),
    Operation("get_version", Kind.CATALOG, Http("GET", "/datasets/{name}/versions/{version}"), "datasets"),
    Operation("list_samples", Kind.CATALOG, Http("GET", "/datasets/{name}/versions/{version}/samples"), "samples"),
    Operation("diff", Kind.CATALOG, Http("GET", "/diff"), "diff"),
    # -- runs --------------------------------------------------------------------------------
    Operation("list_runs", Kind.CATALOG, Http("GET", "/runs"), "runs"),
    Operation("get_run", Kind.CATALOG, Http("GET", "/runs/{run_id}"), "runs"),
    Operation("list_pipeline_runs", Kind.CATALOG, Http("GET", "/pipeline-runs"), "pipeline-runs"),
    Operation("get_pipeline_run", Kind.CATALOG, Http("GET", "/pipeline-runs/{pipeline_run_id}"), "pipeline-runs"),
    # -- releases: publish (with the gate), deprecate, manifests, quality ----------------------
    Operation("list_releases", Kind.CATALOG, Http("GET", "/releases"), "release list"),
    Operation("create_release", Kind.CATALOG, Http("POST", "/releases"), "release publish"),
    Operation("get_release", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}"), "release show"),
    Operation("publish_release", Kind.CATALOG, Http("POST", "/releases/{name}/{tag}/publish"), "release publish"),
    Operation("deprecate_release", Kind.CATALOG, Http("POST", "/releases/{name}/{tag}/deprecate"), "release deprecate"),
    Operation("get_manifest", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/manifest"), "release show"),
    Operation("get_quality", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/quality"), "release report"),
    # -- replicas and their states, usage records, pins, placement plans -----------------------
    Operation("list_replicas", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/replicas"), "release show"),
    Operation("record_read", Kind.CATALOG, Http("POST", "/releases/{name}/{tag}/reads"), "release record-read"),
    Operation("list_reads", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/reads"), "release reads"),
    Operation("pin_release", Kind.CATALOG, Http("POST", "/releases/{name}/{tag}/pins"), "release pin"),
    Operation("list_pins", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/pins"), "release pins"),
    Operation("plan_placement", Kind.CATALOG, Http("GET", "/placement/plan"), "tier plan"),
    # -- sample lineage, why-not, source -> releases --------------------------------------------
    Operation("sample_lineage", Kind.CATALOG, Http("GET", "/samples/{sample_id}/lineage"), "sample"),
    Operation("why_not", Kind.CATALOG, Http("GET", "/samples/{sample_id}/why-not"), "why-not"),
    Operation("source_releases", Kind.CATALOG, Http("GET", "/sources/releases"), "source-releases"),
    Operation(
        "releases_containing_version",
        Kind.CATALOG,
        Http("GET", "/datasets/{name}/versions/{version}/releases"),
        "source-releases",
        service="source_releases",
    ),
    # -- takedown ----------------------------------------------------------------------------
    Operation("create_takedown", Kind.CATALOG, Http("POST", "/takedowns"), "takedown request"),
    Operation("list_takedowns", Kind.CATALOG, Http("GET", "/takedowns"), "takedown list"),
    Operation("get_takedown", Kind.CATALOG, Http("GET", "/takedowns/{request_id}"), "takedown show"),
    Operation("plan_takedown", Kind.CATALOG, Http("GET", "/takedowns/{request_id}/plan"), "takedown plan"),
    # -- training exports: the record and sequence-level lineage (writing one is export_release) ----
    Operation("list_exports", Kind.CATALOG, Http("GET", "/exports"), "exports"),
    Operation("get_export", Kind.CATALOG, Http("GET", "/exports/{export_id}"), "exports"),
    Operation("export_sequence", Kind.CATALOG, Http("GET", "/exports/{export_id}/sequences/{sequence}"), "sequence"),
    Operation(
        "sample_sequences", Kind.CATALOG, Http("GET", "/exports/{export_id}/samples/{sample_id}/sequences"), "sequence"
    ),
    Operation("training_step", Kind.CATALOG, Http("GET", "/exports/{export_id}/steps/{step}"), "training-step"),
    Operation("reader_step", Kind.CATALOG, Http("GET", "/exports/{export_id}/reader-steps/{step}"), "reader-step"),
    # -- OpenLineage intake and the graph -------------------------------------------------------
    Operation("post_lineage_event", Kind.CATALOG, Http("POST", "/lineage"), "lineage-event", service="ingest_event"),
    Operation("lineage_graph", Kind.CATALOG, Http("GET", "/lineage"), "lineage-graph"),
    # -- one search box over names and ids (the web view's entry point) -------------------------
    Operation("search", Kind.CATALOG, Http("GET", "/search"), "search"),
    # -- eval sets (registering reads files: in-process) ---------------------------------------
    Operation("list_evalsets", Kind.CATALOG, Http("GET", "/evalsets"), "evalset list"),
    Operation("get_evalset", Kind.CATALOG, Http("GET", "/evalsets/{name}"), "evalset show"),
    Operation("list_evalset_versions", Kind.CATALOG, Http("GET", "/evalsets/{name}/versions"), "evalset show"),
    Operation("get_evalset_version", Kind.CATALOG, Http("GET", "/evalsets/{name}/versions/{version}"), "evalset show"),
    Operation("register_collection", Kind.CATALOG, Http("POST", "/evalsets/{name}/versions"), "evalset collect"),
    Operation("diff_evalset", Kind.CATALOG, Http("GET", "/evalsets/{name}/diff"), "evalset diff"),
    Operation("deprecate_evalset", Kind.CATALOG, Http("POST", "/evalsets/{name}/deprecate"), "evalset deprecate"),
    Operation("record_eval_run", Kind.CATALOG, Http("POST", "/eval-runs"), "eval record"),
    Operation("get_eval_run", Kind.CATALOG, Http("GET", "/eval-runs/{run_id}"), "eval show"),
    Operation("release_evals", Kind.CATALOG, Http("GET", "/releases/{name}/{tag}/evals"), "release evals"),
    Operation(
        "evalset_item_samples",
        Kind.CATALOG,
        Http("GET", "/evalsets/{name}/versions/{version}/items/{item_id}/samples"),
        "evalset samples",
    ),
    Operation("register_evalset", Kind.TIER, TIER_DATA, "evalset register"),
    Operation("check_evalset", Kind.TIER, TIER_DATA, "evalset check"),
    # -- tokens ------------------------------------------------------------------------------
    Operation("create_token", Kind.CATALOG, Http("POST", "/tokens"), "token create"),
    Operation("list_tokens", Kind.CATALOG, Http("GET", "/tokens"), "token list"),
    Operation("revoke_token", Kind.CATALOG, Http("DELETE", "/tokens/{token_id}"), "token revoke"),
    # -- data on the tiers: in-process only ------------------------------------------------------
    Operation("run_pipeline", Kind.TIER, TIER_DATA, "run"),
    Operation("plan_pipeline", Kind.TIER, TIER_DATA, "run"),  # ``lineage run FILE --plan``: fingerprints the raw files
    Operation("ingest", Kind.TIER, TIER_DATA, "ingest"),
    Operation("dedupe_files", Kind.TIER, TIER_DATA, "dedupe"),
    Operation("export_release", Kind.TIER, TIER_DATA, "export"),
    Operation("verify_export", Kind.TIER, TIER_DATA, "export-verify"),
    Operation("copy_release", Kind.TIER, TIER_DATA, "tier copy"),
    Operation("move_release", Kind.TIER, TIER_DATA, "tier move"),
    Operation("verify_release", Kind.TIER, TIER_DATA, "tier verify"),
    Operation("apply_placement", Kind.TIER, TIER_DATA, "tier apply"),
    Operation("collect_garbage", Kind.TIER, TIER_DATA, "gc"),
    Operation("apply_takedown", Kind.TIER, TIER_DATA, "takedown apply"),
    Operation("purge_takedown", Kind.TIER, TIER_DATA, "takedown purge"),
    # -- servers and the whole path -----------------------------------------------------------
    Operation("health", Kind.SERVER, Http("GET", "/health"), None),
    Operation("serve", Kind.SERVER, InProcess("starts the HTTP server itself"), "serve", service="", sdk=False),
    Operation("demo", Kind.SERVER, InProcess("the whole path on the bundled corpus"), "demo", service="", sdk=False),
)

# What the issues name as the only exceptions to "every operation on all three surfaces", by CLI verb
# (and health, which has no verb): the test checks that exactly these rows are TIER or SERVER. #17 named
# the first nine; #21 adds export-verify, which reads an export's files on its tier as tier verify does.
IN_PROCESS_VERBS = frozenset(
    {"run", "ingest", "dedupe", "export", "export-verify", "tier copy", "tier move", "tier verify", "tier apply", "gc"}
    | {"evalset register", "evalset check"}  # #19's: they read eval items or whole releases on the tiers
    | {"takedown apply", "takedown purge"}  # #22: they rewrite and delete the files holding the samples
)
SERVER_OPERATIONS = frozenset({"serve", "demo", "health"})

# Public members of the surfaces that are no operation: plumbing and the SDK's aliases.
NOT_OPERATIONS = {
    "sdk": frozenset({"close", "iter_all", "publish"}),  # ``publish`` is ``create_release``'s short name
    "service": frozenset({"close", "warm", "lineage_graph_json"}),  # json: what ``lineage_graph``'s route sends
}


ENDPOINTS: tuple[Operation, ...] = tuple(op for op in OPERATIONS if isinstance(op.http, Http))

"""The ``lineage`` command: the one module that imports the command modules and puts their verbs on the app.

Each command module (``run``, ``release``, ``tier``, ...) holds plain functions whose typed parameters and
docstrings are a verb's options and help; none of them knows the app. :func:`build_app` names every verb,
in the order ``lineage --help`` lists them, so this file is the CLI's table of contents. Nothing
registers on import: each call builds a new app (the import-linter contract ``cli-commands`` keeps any
other module from importing a command module).

Importing this module imports nothing of the CLI: :func:`build_app` and :func:`main` do. A worker process
that ``lineage dedupe`` spawns to parse JSON imports the main module again (the console script, or
``lineage.__main__``), which imports this one, and the CLI layer (typer, the settings, every command
module) was 0.19 s of each worker's start-up, while the command waited for the worker's first block.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


def build_app() -> typer.Typer:
    """The whole ``lineage`` command, every verb on it."""
    # start-up: the CLI layer, not in a parser worker's import of the main module (module docstring)
    from lineage.cli import (
        datasets,
        dedupe,
        demo,
        evalset,
        export,
        gc,
        graph,
        release,
        run,
        sample,
        search,
        serve,
        takedown,
        tier,
        tokens,
    )
    from lineage.cli.app import new_app, new_group

    app = new_app()
    for command in (
        run.ingest,
        run.run,
        sample.sample,
        sample.samples,
        sample.why_not,
        sample.source_releases,
        graph.lineage_event,
        graph.lineage_graph,
        search.search,
        export.export,
        export.exports,
        export.sequence,
        export.training_step,
        export.reader_step,
        export.export_verify,
        dedupe.dedupe,
        gc.gc,
        datasets.datasets,
        datasets.runs,
        datasets.pipeline_runs,
        datasets.diff,
        demo.demo,
        serve.serve,
    ):
        app.command()(command)

    dataset_group = new_group(app, "dataset", "Edit a dataset's metadata (`lineage datasets` lists them).")
    dataset_group.command("update")(datasets.dataset_update)

    releases = new_group(app, "release", "Publish, list, inspect and deprecate releases (NAME@TAG).")
    releases.command("publish")(release.release_publish)
    releases.command("deprecate")(release.release_deprecate)
    releases.command("report")(release.release_report)
    releases.command("list")(release.release_list)
    releases.command("show")(release.release_show)
    releases.command("pin")(release.release_pin)
    releases.command("pins")(release.release_pins)
    releases.command("record-read")(release.release_record_read)
    releases.command("reads")(release.release_reads)
    releases.command("evals")(evalset.release_evals)

    evalsets = new_group(app, "evalset", "Eval sets as versioned assets (NAME:vN): register, list, show, diff.")
    evalsets.command("register")(evalset.evalset_register)
    evalsets.command("collect")(evalset.evalset_collect)
    evalsets.command("list")(evalset.evalset_list)
    evalsets.command("show")(evalset.evalset_show)
    evalsets.command("diff")(evalset.evalset_diff)
    evalsets.command("deprecate")(evalset.evalset_deprecate)
    evalsets.command("check")(evalset.evalset_check)
    evalsets.command("samples")(evalset.evalset_samples)

    evals = new_group(app, "eval", "Eval runs: a model's results on an eval set version, traced to its data.")
    evals.command("record")(evalset.eval_record)
    evals.command("show")(evalset.eval_show)

    tiers = new_group(app, "tier", "Copy, move and verify releases across storage tiers.")
    tiers.command("copy")(tier.tier_copy)
    tiers.command("move")(tier.tier_move)
    tiers.command("verify")(tier.tier_verify)
    tiers.command("plan")(tier.tier_plan)
    tiers.command("apply")(tier.tier_apply)

    takedowns = new_group(
        app,
        "takedown",
        "Takedown requests: record, list, plan (changes nothing), apply (successor releases), purge (the bytes).",
    )
    takedowns.command("request")(takedown.takedown_request)
    takedowns.command("list")(takedown.takedown_list)
    takedowns.command("show")(takedown.takedown_show)
    takedowns.command("plan")(takedown.takedown_plan)
    takedowns.command("apply")(takedown.takedown_apply)
    takedowns.command("purge")(takedown.takedown_purge)

    token_group = new_group(app, "token", "Create, list and revoke API tokens (roles: reader, writer, admin).")
    token_group.command("create")(tokens.token_create)
    token_group.command("list")(tokens.token_list)
    token_group.command("revoke")(tokens.token_revoke)
    return app


def only_the_group_invoked(app: typer.Typer, args: list[str]) -> typer.Typer:
    """``app`` with only the verb group ``args`` invoke (``lineage takedown apply 1``: the ``takedown``
    group), when they name one. Typer turns every verb of an app into a click command, reading each one's
    signature and help, at every run: about 0.08 s for all of them, where one group's verbs take a tenth
    of that. The group's commands, options and help are the same (``tests/lineage/cli/test_main.py``).
    Anything else (a top-level verb, ``--help``, an unknown name, shell completion) gets the whole app."""
    first = 0
    while first < len(args) and args[first] in _ROOT_FLAGS:
        first += 1
    if first == len(args) or any(name.endswith("_COMPLETE") for name in os.environ):
        return app
    groups = [g for g in app.registered_groups if g.name == args[first]]
    if len(groups) != 1:
        return app
    app.registered_groups, app.registered_commands = groups, []
    return app


_ROOT_FLAGS = frozenset({"--verbose", "-v"})  # the root's options that may come before a group's name


FULL_COLLECTION_SPACING = 100


def space_full_collections() -> None:
    """Full collections (the oldest generation) a hundred times further apart in the ``lineage`` process.

    A full collection walks every object not frozen: what a verb imports after start-up (the pipeline and
    its operators, numba's kernels and their type metadata) and its working state. In a ``lineage dedupe``
    of 20,000 or 254,724 documents the one or two that ran took 20-85 ms with the GIL held and freed 5-15
    objects. Young collections are unchanged, so cyclic garbage is still collected young; what survives
    to the oldest generation is collected every ``10 * 100`` second-generation collections (about 7M
    allocations) instead of every 10."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old * FULL_COLLECTION_SPACING)


def main() -> None:
    """The console script ``lineage`` and ``python -m lineage``. A refusal that escapes a verb's own
    :func:`~lineage.cli.app.guard` (settings that do not load, a catalog that cannot be opened) is one line
    and its exit code too; anything else is a bug and prints its traceback."""
    # The CLI layer's imports make some 60,000 objects, none of them garbage, that the cyclic collector
    # walked in 102 collections: it is off until they are frozen, as for the service's imports
    # (lineage.cli.app.collector_paused). A takedown apply took 1.34-1.36 s against 1.48-1.53 s (medians).
    gc.disable()
    try:
        # start-up: the CLI layer, not in a parser worker's import of the main module (module docstring)
        from lineage.cli.app import as_whole_process, freeze_start_up, report
        from lineage.errors import translate

        as_whole_process()
        app = only_the_group_invoked(build_app(), sys.argv[1:])
    finally:
        gc.freeze()
        space_full_collections()
        gc.enable()
    try:
        app()
    except Exception as exc:
        error = translate(exc)
        if error is None:
            raise
        sys.exit(report(error))
    finally:
        freeze_start_up()  # the interpreter's exit then skips its collections over what is alive

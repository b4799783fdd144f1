"""schemathesis over the whole API with every check, as ``schemathesis run --checks all`` (the CLI, with
all its phases: examples, coverage, fuzzing, stateful) against a real uvicorn server on each catalog
backend: no 5xx, no failing check, no request that errors or times out.

Two kinds of run (``schemathesis_hooks.py``): as an admin (a token header, made in the catalog and
made again if the run revokes it), on each backend, and anonymously, where every operation but
``/health`` must answer 401 whatever was sent. The anonymous run is made on SQLite only: the refusal
happens before any operation's query, and the token look-up it may make is the admin runs' on both
backends (a second anonymous run cost the suite a minute). ``GET /diff`` must be reached with data
that exists (the document's examples name the README's demo, which the world below is built as), not
only answered with 404.
A fixed seed and a bounded number of examples per operation keep a run reproducible and under a
minute or so.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.app import create_app
from lineage.runs import Runner
from lineage.service.core import Service
from lineage.service.operations import ENDPOINTS
from tests.support.api_world import BACKENDS, ROOT, ServerThread, build_corpus, make_settings, server_env, spec
from tests.support.helpers import write_jsonl

SEED = 20261201
EXAMPLES = {"admin": 15, "anonymous": 8}  # per operation and phase
MIN_CASES = {"admin": 1200, "anonymous": 900}
CONFIG = """
cache.enabled = false  # no state carried from one run to the next

[[operations]]
include-operation-id = "diff"
warnings = { fail-on = ["missing_test_data"] }
"""


@pytest.fixture(scope="module")
def fuzz_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """debian-clean v1 released as debian-clean@demo, and v2 with one more file; auth is on."""
    tmp: Path = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    service = Service(make_settings(tmp, request.param, request, single_user=False))
    corpus = build_corpus(tmp / "raw")
    runner = Runner(service.settings, service.catalog)
    runner.run(spec(corpus, output="debian-clean"))
    service.create_release({"name": "debian-clean", "tag": "demo"})
    write_jsonl(corpus / "c.jsonl", [{"id": "added", "text": "a brand new document about compilers and linkers"}])
    runner.run(spec(corpus, output="debian-clean"))
    service.create_token("owner", "admin")
    (tmp / "schemathesis.toml").write_text(CONFIG)
    with ServerThread(create_app(service.settings, service)) as srv:
        yield service, srv, tmp / "schemathesis.toml"
    service.close()


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("fuzz_server", "who"),
    [*((backend, "admin") for backend in BACKENDS), ("sqlite", "anonymous")],
    indirect=["fuzz_server"],
)
def test_every_check_passes_over_the_whole_api(fuzz_server: tuple, who: str) -> None:
    service, srv, config = fuzz_server
    env = server_env(service.settings, SCHEMATHESIS_HOOKS="tests.api.schemathesis_hooks", LINEAGE_FUZZ_AS=who)
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run", f"{srv.url}/openapi.json"),
        *("--checks", "all", "--max-examples", str(EXAMPLES[who]), "--seed", str(SEED), "--workers", "1"),
        *("--request-timeout", "10", "--generation-database", "none", "--no-color"),
    ]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=840)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-30_000:]
    cases = re.search(r"(\d+) generated, (\d+) passed", report)
    print(f"schemathesis as {who}: {cases[0] if cases else 'no summary'}")
    assert cases is not None and cases[1] == cases[2], report[-3_000:]
    assert int(cases[1]) >= MIN_CASES[who], report[-3_000:]
    assert re.search(rf"Tested: {len(ENDPOINTS)}\b", report), report[-3_000:]

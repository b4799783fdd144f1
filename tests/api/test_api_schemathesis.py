"""Property-based run over our OpenAPI document with schemathesis, against a real uvicorn server:
no generated request (valid or not) may get a 5xx, and every answer must match the document.

At least 500 cases per catalog backend (SQLite, PostgreSQL) across all operations (checked by the
last test), with a fixed derandomised seed so runs are reproducible.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from api.app import create_app
from lineage.service.core import Service
from pipelines.runner import Runner
from tests.api.conftest import BACKENDS, ServerThread, build_corpus, make_settings, spec

EXAMPLES_PER_OPERATION = 15
MIN_CASES = 500
_calls: dict[str, int] = {}


@pytest.fixture(scope="module", params=BACKENDS)
def fuzz_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    tmp: Path = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    service = Service(make_settings(tmp, request.param, request))
    Runner(service.settings, service.catalog).run(spec(build_corpus(tmp / "raw")))
    service.create_release({"name": "clean", "tag": "v1"})
    token = service.create_token("fuzzer", "admin").token  # auth on: every operation checks its token
    with ServerThread(create_app(service.settings, service)) as srv:
        yield {"url": srv.url, "headers": {"Authorization": f"Bearer {token}"}}
    service.close()


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_api_never_fails_and_matches_its_schema(fuzz_server: dict, mode: str) -> None:
    """Every operation, with valid (positive) and invalid (negative) generated requests: no 5xx, answers
    match the document, invalid input is refused with a 4xx."""
    api = schemathesis.openapi.from_url(f"{fuzz_server['url']}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 20
    no_negative = []
    for operation in operations:
        try:
            _fuzz(operation, mode, fuzz_server["headers"])
        except Unsatisfiable:
            if mode != "negative":
                raise
            no_negative.append(f"{operation.method.upper()} {operation.path}")
    # only operations without any parameter or body have no invalid input to generate
    assert set(no_negative) <= {"GET /api/v1/health", "GET /api/v1/tokens"}, no_negative


def _fuzz(operation: schemathesis.APIOperation, mode: str, headers: dict[str, str]) -> None:
    key = f"{operation.method.upper()} {operation.path}"

    @given(case=operation.as_strategy(generation_mode=schemathesis.GenerationMode(mode)))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def check(case: schemathesis.Case) -> None:
        _calls[key] = _calls.get(key, 0) + 1
        case.call_and_validate(headers=headers, timeout=30)

    check()


def test_schemathesis_ran_enough_cases() -> None:
    """Runs after the property tests (file order): they must have covered every operation and 500+ cases."""
    total = sum(_calls.values())
    print(f"schemathesis: {total} cases over {len(_calls)} operations")
    assert total >= MIN_CASES * len(BACKENDS), f"only {total} schemathesis cases ran: {_calls}"
    assert len(_calls) >= 20, f"operations covered: {sorted(_calls)}"

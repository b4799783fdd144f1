"""The service's schemas build their validators at first use in a CLI process, and all at once, before any
route is declared, in the HTTP app (``lineage.service.schemas.build_all``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _incomplete_after(code: str) -> list[str]:
    probe = (
        f"{code}\n"
        "import json\n"
        "from lineage.service import schemas as S\n"
        "print(json.dumps(sorted(n for n, v in vars(S).items() if isinstance(v, type)"
        " and issubclass(v, S.BaseModel) and v is not S.BaseModel and not v.__pydantic_complete__)))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_a_cli_process_builds_only_the_schemas_it_uses() -> None:
    incomplete = _incomplete_after("from lineage.service import schemas as S\nS.DedupeResult.model_json_schema()")
    assert "DedupeResult" not in incomplete
    assert {"DatasetOut", "ReleaseCreate", "TakedownCreate"} <= set(incomplete)


def test_the_http_app_builds_every_schema_before_its_routes() -> None:
    assert _incomplete_after("from api.app import create_app\ncreate_app()") == []

"""schemathesis hooks for ``test_api_schemathesis.py`` (the CLI loads them: ``SCHEMATHESIS_HOOKS``).

- With ``LINEAGE_FUZZ_AS=admin`` every request carries an admin token, made straight in the catalog
  the server serves (``LINEAGE_HOME`` / ``LINEAGE_CATALOG_URL``). A 401 makes schemathesis ask for a
  new one and send the request again: the run may revoke its own token with ``DELETE /tokens/{id}``.
- With ``LINEAGE_FUZZ_AS=anonymous`` no token is sent, and the check ``anonymous_is_refused`` asks
  every operation but ``/health`` to answer 401, whatever the request holds.
- Generated bodies keep the rules across fields that the document lists in ``x-constraints``
  (``"a < b"``; ``"now < t"``: the date-time ``t`` is in the future, and in range in UTC), which JSON
  Schema has no keyword for; the server's own refusal of a body that breaks one is tested in
  ``test_api_resources.py`` and ``test_api_placement.py``.
"""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime, timedelta
from typing import Any

import schemathesis

FUZZ_AS = os.environ.get("LINEAGE_FUZZ_AS", "admin")


@functools.cache
def _service() -> Any:
    from lineage.service.core import Service
    from lineage.settings import get_settings

    return Service(get_settings())


if FUZZ_AS == "admin":

    @schemathesis.auth()
    class AdminToken:
        def get(self, case: schemathesis.Case, ctx: Any) -> str:
            return _service().create_token("fuzzer", "admin", actor="fuzzer").token

        def set(self, case: schemathesis.Case, data: str, ctx: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


if FUZZ_AS == "anonymous":

    @schemathesis.check
    def anonymous_is_refused(ctx: Any, response: schemathesis.Response, case: schemathesis.Case) -> None:
        """401 before anything else: an anonymous caller learns nothing of what an operation takes."""
        if case.operation.path.endswith("/health") or response.request.method != case.operation.method.upper():
            return  # /health is open; another method on the path is answered by routing (405)
        if response.status_code != 401:
            raise AssertionError(f"an anonymous request got {response.status_code}, not 401")


def _constraints(operation: Any) -> list[tuple[str, str]]:
    """The ``x-constraints`` of the operation's JSON body schema, as (lower, higher) property names."""
    content = operation.definition.raw.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    ref = schema.get("$ref", "")
    if ref.startswith("#/"):
        schema = operation.schema.raw_schema
        for part in ref[2:].split("/"):
            schema = schema[part]
    pairs = [rule.split("<") for rule in schema.get("x-constraints", [])]
    return [(low.strip(), high.strip()) for low, high in pairs]


@schemathesis.hook
def filter_case(ctx: schemathesis.HookContext, case: schemathesis.Case) -> bool:
    """Of every phase (the coverage phase, which sets each property to its bounds in turn, applies
    only case hooks)."""
    body = case.body
    if not isinstance(body, dict) or ctx.operation is None:
        return True
    for low, high in _constraints(ctx.operation):
        if low == "now":
            if not _future(body.get(high)):
                return False
            continue
        a, b = body.get(low), body.get(high)
        if _number(a) and _number(b) and a >= b:
            return False
    return True


def _future(value: object) -> bool:
    """A date-time at least a minute ahead whose UTC time is in Python's range; anything that is no
    date-time is kept (the server refuses it, as it must)."""
    if not isinstance(value, str):
        return True
    try:
        moment = datetime.fromisoformat(value.upper())
    except ValueError:
        return True
    try:
        moment = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        return False
    return moment > datetime.now(UTC) + timedelta(minutes=1)


def _number(value: object) -> bool:
    """A JSON number (schemathesis also writes integers as 3.0, which JSON Schema counts as integers)."""
    return isinstance(value, int | float) and not isinstance(value, bool)

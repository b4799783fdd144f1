"""Single-request S3 uploads with an unsigned payload, for copies that are proven by reading back.

Over plain HTTP (how RGW usually runs inside a data centre) the AWS SDK inside pyarrow signs every
payload: it hashes each part with SHA-256, and the gateway hashes it again to check the signature,
on top of the MD5 it always computes for the ETag. A tier copy does not need that: every file is
read back from the destination and checked against its xxh3-128 before it counts as copied. So
copies to an S3 tier with its own endpoint go out as one ``PUT`` per file (up to
:data:`SINGLE_PUT_MAX` bytes), signed with SigV4 over the headers only
(``x-amz-content-sha256: UNSIGNED-PAYLOAD``), streamed from the source. On a 2-core machine this
roughly halves the gateway's CPU per byte; see ``benchmarks/tiers.py``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

SINGLE_PUT_MAX = 5 * 1024**3  # S3's limit for one PUT; larger files go through pyarrow's multipart upload
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"


def sigv4_authorization(
    method: str,
    path: str,
    headers: Mapping[str, str],
    *,
    region: str,
    access_key: str,
    secret_key: str,
    payload_hash: str,
    query: str = "",
    service: str = "s3",
) -> str:
    """The ``Authorization`` header of an AWS Signature Version 4 request.

    ``path`` is already URI-encoded; ``headers`` (lower-case names) are all signed and must hold
    ``host``, ``x-amz-date`` and ``x-amz-content-sha256``.
    """
    amz_date = headers["x-amz-date"]
    names = sorted(headers)
    canonical = "\n".join(
        [method, path, query, *(f"{n}:{headers[n].strip()}" for n in names), "", ";".join(names), payload_hash]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (amz_date[:8], region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"


@dataclass
class UnsignedPut:
    """Uploads objects to one S3 endpoint (path-style addressing, as RGW and other gateways use)."""

    endpoint: str  # scheme://host[:port]
    region: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    timeout: float = 300.0

    def __post_init__(self) -> None:
        import httpx  # start-up: keeps httpx out of every import of storage.tier (and of tier copies to non-S3 tiers)

        self._host = self.endpoint.split("://", 1)[1]
        self._client: httpx.Client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=10.0))

    def put(self, fs_path: str, chunks: Callable[[], Iterable[bytes]], size: int) -> None:
        """Store ``size`` bytes at ``bucket/key`` (``fs_path``); ``chunks()`` gives the bytes.

        A dropped connection or a 5xx answer is retried once with a fresh ``chunks()``.
        """
        import httpx  # start-up: as in __post_init__ (here for its exception classes)

        path = "/" + urllib.parse.quote(fs_path, safe="/-_.~")
        for attempt in (1, 2):
            try:
                response = self._client.put(
                    self.endpoint + path, content=chunks(), headers=self._signed_headers(path, size)
                )
            except httpx.TransportError as exc:
                if attempt == 2:
                    raise OSError(f"PUT {fs_path} to {self.endpoint}: {exc}") from exc
                log.warning("PUT %s failed (%s); retrying", fs_path, exc)
                continue
            if response.status_code < 300:
                return
            if response.status_code < 500 or attempt == 2:
                raise OSError(f"PUT {fs_path} to {self.endpoint}: HTTP {response.status_code} {response.text[:300]}")
            log.warning("PUT %s answered HTTP %d; retrying", fs_path, response.status_code)

    def _signed_headers(self, path: str, size: int) -> dict[str, str]:
        headers = {
            "host": self._host,
            "x-amz-content-sha256": UNSIGNED_PAYLOAD,
            "x-amz-date": dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ"),
        }
        if self.session_token:
            headers["x-amz-security-token"] = self.session_token
        headers["authorization"] = sigv4_authorization(
            "PUT",
            path,
            headers,
            region=self.region,
            access_key=self.access_key,
            secret_key=self.secret_key,
            payload_hash=UNSIGNED_PAYLOAD,
        )
        del headers["host"]  # httpx sends it from the URL
        headers["content-length"] = str(size)
        return headers

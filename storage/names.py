"""The name grammar: one copy of what a name, a reference and a sample id may look like.

::

    NAME        = [A-Za-z0-9][A-Za-z0-9._-]{0,127}      a dataset, a release name, a release tag, a tier
    RELEASE_REF = NAME "@" NAME                          a release: ``web-clean@2024-06``
    VERSION_REF = NAME [":" ["v"] 1*9DIGIT]              a dataset version (``web-clean:v3``), or its latest
    REF         = RELEASE_REF | VERSION_REF              what a diff starts from
    SAMPLE_ID   = 1*200 printable ASCII, no space        what operators stamp as ``sample_id``

A name is safe as a path segment on every tier (``datasets/<name>/data``) and in a URL path without
escaping. The ``*_PATTERN`` strings are the ones the HTTP API puts in its OpenAPI document, so the API,
the service, the CLI and the runner refuse the same names with the same rule. Digits are ASCII only
(``[0-9]``, not ``\\d``, which also matches other scripts' digits). A refusal is
:class:`~storage.errors.Invalid` (a ``ValueError``).
"""

from __future__ import annotations

import re

from storage.errors import Invalid

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
_VERSION = r"v?[0-9]{1,9}"

NAME_MAX = 128
NAME_PATTERN = rf"^{_NAME}$"
RELEASE_REF_PATTERN = rf"^{_NAME}@{_NAME}$"
REF_PATTERN = rf"^{_NAME}(@{_NAME}|:{_VERSION})?$"
VERSION_REF_PATTERN = rf"^{_NAME}(:{_VERSION})?$"  # a dataset or eval set version, or its latest
SAMPLE_ID_PATTERN = r"^[\x21-\x7e]{1,200}$"
NO_NUL_PATTERN = r"^[^\x00]*$"  # free text: PostgreSQL text cannot hold NUL, so every backend refuses it

_NAME_RE = re.compile(NAME_PATTERN)
_RELEASE_REF_RE = re.compile(rf"^({_NAME})@({_NAME})$")
_VERSION_REF_RE = re.compile(rf"^({_NAME})(?::v?([0-9]{{1,9}}))?$")
_SAMPLE_ID_RE = re.compile(SAMPLE_ID_PATTERN)


def check_name(name: str, what: str = "dataset") -> str:
    """``name`` if it is a NAME; ``what`` says which kind in the message (dataset, tag, tier …)."""
    if not _NAME_RE.match(name):
        raise Invalid(
            f"invalid {what} name {name!r}: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def parse_release_ref(ref: str) -> tuple[str, str]:
    """``NAME@TAG`` → ``(name, tag)``."""
    match = _RELEASE_REF_RE.match(ref)
    if not match:
        raise Invalid(f"invalid release reference {ref!r}: expected NAME@TAG")
    return match.group(1), match.group(2)


def parse_version_ref(ref: str) -> tuple[str, int | None]:
    """``DATASET:vN`` / ``DATASET:N`` → ``(dataset, N)``; ``DATASET`` → ``(dataset, None)``, its latest."""
    match = _VERSION_REF_RE.match(ref)
    if not match:
        raise Invalid(f"invalid reference {ref!r}: expected NAME@TAG, DATASET:vN or DATASET")
    return match.group(1), int(match.group(2)) if match.group(2) else None


def check_sample_id(sample_id: str) -> str:
    if not _SAMPLE_ID_RE.match(sample_id):
        raise Invalid(f"invalid sample id {sample_id[:80]!r}: expected 1-200 printable ASCII characters")
    return sample_id

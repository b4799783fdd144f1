"""The name grammar (storage/names.py) is one rule: each parser accepts exactly what its OpenAPI pattern
accepts, and the in-process service refuses what the HTTP API refuses."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lineage.client import BadRequest, Client
from lineage.settings import Settings
from storage import names
from storage.config import TierConfig

# Near-misses matter more than random text: build strings from the grammar's own alphabet and its edges.
_ALPHABET = st.sampled_from([*"aZ09._-@:v", "\x00", " ", "٣", "é", "\x7f"])
_NEAR = st.text(_ALPHABET, min_size=0, max_size=12) | st.text(max_size=140)


def _accepts(parse, text: str) -> bool:  # type: ignore[no-untyped-def]
    try:
        parse(text)
    except ValueError:
        return False
    return True


@given(_NEAR | st.from_regex(names.NAME_PATTERN, fullmatch=True))
def test_check_name_is_the_name_pattern(text: str) -> None:
    assert _accepts(names.check_name, text) == bool(re.match(names.NAME_PATTERN, text))


@given(_NEAR | st.from_regex(names.RELEASE_REF_PATTERN, fullmatch=True))
def test_parse_release_ref_is_the_release_ref_pattern(text: str) -> None:
    assert _accepts(names.parse_release_ref, text) == bool(re.match(names.RELEASE_REF_PATTERN, text))


@given(_NEAR | st.from_regex(names.REF_PATTERN, fullmatch=True))
def test_a_ref_is_a_release_ref_or_a_version_ref(text: str) -> None:
    either = _accepts(names.parse_release_ref, text) or _accepts(names.parse_version_ref, text)
    assert either == bool(re.match(names.REF_PATTERN, text))


@given(_NEAR | st.from_regex(names.SAMPLE_ID_PATTERN, fullmatch=True))
def test_check_sample_id_is_the_sample_id_pattern(text: str) -> None:
    assert _accepts(names.check_sample_id, text) == bool(re.match(names.SAMPLE_ID_PATTERN, text))


def test_a_version_ref_parses_to_dataset_and_number() -> None:
    assert names.parse_version_ref("web-clean:v3") == ("web-clean", 3)
    assert names.parse_version_ref("web-clean:3") == ("web-clean", 3)
    assert names.parse_version_ref("web-clean") == ("web-clean", None)
    assert names.parse_release_ref("web-clean@2024-06") == ("web-clean", "2024-06")


@pytest.mark.parametrize("ref", ["ds:v٣", "ds:٣"])  # ARABIC-INDIC DIGIT THREE: a digit to `\d`, not to the API
def test_the_in_process_client_refuses_the_refs_the_api_refuses(settings: Settings, ref: str) -> None:
    assert not re.match(names.REF_PATTERN, ref)  # the HTTP API answers 422
    with pytest.raises(BadRequest, match="invalid reference"):
        Client(settings=settings).diff(ref, "ds")


@pytest.mark.parametrize("name", ["cold tier", "", "-x", "a/b", "ceph@bj", "x" * 129])
def test_a_tier_name_follows_the_name_grammar(name: str) -> None:
    with pytest.raises(ValidationError, match="invalid tier name"):
        TierConfig(name=name, root="/tmp/t")
    assert TierConfig(name="cold-2.bj_1", root="/tmp/t").name == "cold-2.bj_1"

"""ISA-L's gzip streams are plain gzip both ways: what we write every reader decodes, what gzip writes we read,
and damage raises an error that convert's readers turn into a quarantine record."""

from __future__ import annotations

import gzip
import random
import subprocess
import zlib

import pytest

from operators.convert.readers import CORRUPTION_ERRORS
from storage import gzip_codec


def _text(size: int, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    words = [bytes(rng.choices(b"abcdefghij", k=rng.randint(2, 9))) for _ in range(500)]
    return b" ".join(rng.choices(words, k=size // 6))[:size]


def _inflate(stream: bytes) -> bytes:
    """Every member of ``stream``, as convert's reader inflates them."""
    out, z = [], gzip_codec.decompressor()
    while stream:
        out.append(z.decompress(stream))
        stream = z.unused_data
        if z.eof and stream:
            z = gzip_codec.decompressor()
    assert z.eof
    return b"".join(out)


def test_a_member_is_gzip_to_every_reader_and_the_same_bytes_give_the_same_member() -> None:
    data = _text(1 << 20)
    member = gzip_codec.member(data)
    assert member == gzip_codec.member(data)
    assert gzip.decompress(member) == data
    assert zlib.decompress(member, wbits=31) == data
    assert subprocess.run(["gzip", "-dc"], input=member, capture_output=True, check=True).stdout == data
    assert gzip.decompress(gzip_codec.member(b"")) == b""


def test_members_written_by_python_gzip_and_by_us_read_back_as_one_stream() -> None:
    parts = [_text(70_000, seed) for seed in range(3)]
    stream = gzip.compress(parts[0], 9) + gzip_codec.member(parts[1]) + gzip.compress(parts[2], 1, mtime=0)
    assert _inflate(stream) == b"".join(parts)


@pytest.mark.parametrize("where", [0.3, 0.6, 0.97])
def test_damage_raises_an_error_convert_quarantines(where: float) -> None:
    member = bytearray(gzip.compress(_text(200_000), 6))
    member[int(len(member) * where)] ^= 0x5A
    with pytest.raises(CORRUPTION_ERRORS):
        _inflate(bytes(member))

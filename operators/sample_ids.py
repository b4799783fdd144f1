"""How a sample's id is derived, in a module that imports xxhash alone: JSON parser workers make ids too.

    key       = "id:" + str(record[id_field])             if an id field is configured
              = "pos:" + relative_path + "\\x00" + str(row) otherwise
    sample_id = xxh3_128_hexdigest(source_dataset + "\\x00" + key)

``relative_path`` is the file's path relative to the dataset's root (never a tier URI) and
``row`` is the record's 0-based index in that file, so the id survives tier moves and does not
depend on how an engine splits files. An id is always 32 hexadecimal characters.
"""

from __future__ import annotations

import xxhash

SAMPLE_ID_CHARS = 32


def sample_key_from_id(record_id: object) -> str:
    return f"id:{record_id}"


def sample_key_from_position(relative_path: str, row: int) -> str:
    return f"pos:{relative_path}\x00{row}"


def sample_id(source_dataset: str, key: str) -> str:
    return xxhash.xxh3_128_hexdigest(f"{source_dataset}\x00{key}".encode())

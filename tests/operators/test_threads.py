"""operators.threads: the ordered thread map and the short GIL hand-over."""

from __future__ import annotations

import sys
import time

import pytest

from operators.threads import ordered_map, quick_handover


def test_ordered_map_keeps_the_order_of_its_items() -> None:
    def slow_for_small(i: int) -> int:
        time.sleep(0.001 * (10 - i))  # earlier items finish later
        return i * i

    assert list(ordered_map(slow_for_small, range(10), workers=3)) == [i * i for i in range(10)]


def test_quick_handover_shortens_the_switch_interval_and_restores_it_even_on_error() -> None:
    before = sys.getswitchinterval()
    with quick_handover():
        assert sys.getswitchinterval() < before / 10
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError), quick_handover():
        raise RuntimeError("boom")
    assert sys.getswitchinterval() == before

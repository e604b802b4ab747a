"""The pure arithmetic of a pass's window times: the first overlap, and an order to write rows in
that never overlaps on the way (the database checks each row as it is written)."""

import itertools

import pytest

from annotation.rules.window_times import first_overlap, write_layers


def test_neighbours_that_touch_do_not_overlap():
    assert first_overlap([(1, 2.0, 4.0), (0, 0.0, 2.0), (2, 4.0, 6.0)]) is None


def test_the_first_overlap_names_both_windows_in_words():
    overlap = first_overlap([(0, 0.0, 7.5), (1, 5.0, 10.0)])
    assert overlap is not None
    assert overlap.message() == (
        "Window 1 (0.00–7.50 s) overlaps window 2 (5.00–10.00 s): a window must end at or before the next one starts."
    )


def apply(before, after, layers):
    """Write the layers one row at a time, in every order within a layer, checking each write."""
    for order in itertools.product(*(itertools.permutations(layer) for layer in layers)):
        state = dict(before)
        for key in itertools.chain.from_iterable(order):
            state[key] = after[key]
            others = [(k, *t) for k, t in state.items() if k != key]
            for other, start, end in others:
                assert not (start < after[key][1] and after[key][0] < end), (key, other, state)
        assert state == {**before, **after}


@pytest.mark.parametrize(
    ("before", "after", "count"),
    [
        # Nothing moves: one layer.
        ({0: (0, 2), 1: (2, 4)}, {0: (0, 2), 1: (2, 4)}, 1),
        # A shared boundary moved later: window 2 shrinks first, then window 1 grows.
        ({0: (0, 2), 1: (2, 4)}, {0: (0, 2.5), 1: (2.5, 4)}, 2),
        # ...and earlier.
        ({0: (0, 2), 1: (2, 4)}, {0: (0, 1.5), 1: (1.5, 4)}, 2),
        # Three windows shifted right together: the last one first.
        ({0: (0, 2), 1: (2, 4), 2: (4, 6)}, {0: (0, 2.5), 1: (2.5, 4.5), 2: (4.5, 6)}, 3),
        # Two boundaries far apart: no row waits for another.
        ({0: (0, 2), 1: (2, 4), 2: (4, 6)}, {0: (0, 1.5), 2: (4.5, 6)}, 1),
    ],
)
def test_rows_are_written_in_layers_that_never_overlap_on_the_way(before, after, count):
    layers = write_layers(before, after)
    assert len(layers) == count
    assert sorted(itertools.chain.from_iterable(layers)) == sorted(after)
    apply(before, after, layers)

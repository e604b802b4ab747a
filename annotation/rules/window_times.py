"""A pass's corrected window times: where they overlap, and an order to write them in.

A pass's timeline is every window of its caption in index order, each at its effective
times: the pass's correction's start and end where the pass has one, else the original
window's. The database refuses a write that leaves two of them overlapping (migration
0016), and it checks each row as it is written (SQLite has row triggers only), so rows that
move into the room another moving row leaves must be written after it: `write_layers`.
Pure functions: no Django.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Overlap:
    """Window `first` (0-based index) ends after window `second` starts."""

    first: int
    first_start: float
    first_end: float
    second: int
    second_start: float
    second_end: float

    def message(self) -> str:
        return (
            f"Window {self.first + 1} ({self.first_start:.2f}–{self.first_end:.2f} s) overlaps "
            f"window {self.second + 1} ({self.second_start:.2f}–{self.second_end:.2f} s): "
            f"a window must end at or before the next one starts."
        )


def first_overlap(timeline: Sequence[tuple[int, float, float]]) -> Overlap | None:
    """The first pair of neighbours that overlap in `timeline` ([(index, start, end)] in any
    order), or None. With start < end on every window, neighbours not overlapping means no
    two windows overlap."""
    ordered = sorted(timeline)
    for (index, start, end), (after, next_start, next_end) in zip(ordered, ordered[1:], strict=False):
        if end > next_start:
            return Overlap(index, start, end, after, next_start, next_end)
    return None


def _overlaps(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def write_layers(
    before: Mapping[Key, tuple[float, float]], after: Mapping[Key, tuple[float, float]]
) -> list[list[Key]]:
    """Group the rows `after` (key -> new times; `before` has their times as stored, or the
    original window's for a row not stored yet) into layers written one after another, so
    that no single row written overlaps another row as it stands at that moment.

    A row that moves into the old place of another moving row waits for that row. From one
    timeline without overlaps to another there is always such an order (a row can only wait
    for a row on the side it moves to, and that row moves away from it); rows whose times do
    not change are all in the first layer. Usually that is the only layer."""
    moving = {key for key, times in after.items() if before.get(key) != times}
    waits: dict[Key, set[Key]] = {
        key: {other for other in moving if other != key and _overlaps(after[key], before[other])}
        if key in moving else set()
        for key in after
    }
    layers: list[list[Key]] = []
    written: set[Key] = set()
    while len(written) < len(after):
        layer = [key for key in after if key not in written and waits[key] <= written]
        if not layer:  # only a stored timeline that overlaps already; the last layer takes the rest
            layer = [key for key in after if key not in written]
        layers.append(layer)
        written.update(layer)
    return layers

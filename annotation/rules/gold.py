"""Gold verdicts as a yardstick: comparing a verdict with the gold one, the practice set's pass
rule, the draw of hidden gold checks and the gold pool's capacity.

Pure: plain data in and out, no Django. A verdict is a pass as
:func:`annotation.services.annotation_common.pass_snapshot` writes it (``overview``,
``windows``, ``segmentation``); the services (annotation.services.gold) read them from the
database and store what these functions decide.

**Comparing one item** (:func:`verdict_compare`). The overview verdicts agree when both accept
or both reject; each of the caption's windows likewise (a window one side left unjudged counts
as accepted, as the final version reads it). The failure modes are compared as pairs of (unit,
mode), a unit being ``overview``, ``segmentation`` or ``window N``: a pair only the gold verdict
has was *missed*, one only the annotator's has was *added*; the item's counts (true positives,
missed, added) add up over items for the mode F1.

**The pass rule** (:func:`practice_evaluate`). Over the attempt's items: at least ``min_items``
items, overview verdict agreement (items whose overview verdicts agree / items) at least
``min_overview_agreement``, failure-mode F1 (micro-averaged: 2·TP / (2·TP + missed + added),
1 when neither side named a mode) at least ``min_mode_f1``, window verdict agreement (windows
whose verdicts agree / windows) at least ``min_window_agreement`` (a set without windows
passes this part). Each part that fails is a reason in words.

**Hidden gold checks** (:func:`gold_check_due`). The n-th item an annotator starts (n = 0, 1, ...)
is a gold check when a draw seeded by the study's seed, the annotator and n falls below the
gold rate: each item independently, so over a queue the share of gold checks is binomial
around the rate, and the same queue draws the same slots again.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

REJECT = "reject"
ACCEPT = "accept"

# The gold rate's bound: the study settings' check (annotation.rules.study_settings) refuses more.
GOLD_RATE_MAX = 0.5


def _verdict(value: Any) -> str:
    return REJECT if value == REJECT else ACCEPT


def _unit_modes(snapshot: Mapping[str, Any]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    overview = snapshot.get("overview") or {}
    if _verdict(overview.get("verdict")) == REJECT:
        pairs |= {("overview", str(mode)) for mode in overview.get("modes") or []}
    segmentation = snapshot.get("segmentation") or {}
    if _verdict(segmentation.get("verdict")) == REJECT:
        pairs |= {("segmentation", str(mode)) for mode in segmentation.get("modes") or []}
    for row in snapshot.get("windows") or []:
        if _verdict(row.get("verdict")) == REJECT:
            pairs |= {(f"window {int(row['index']) + 1}", str(mode)) for mode in row.get("modes") or []}
    return pairs


def _window_verdicts(snapshot: Mapping[str, Any]) -> dict[int, str]:
    return {int(row["index"]): _verdict(row.get("verdict")) for row in snapshot.get("windows") or []}


@dataclass(frozen=True)
class ItemComparison:
    """One verdict against the gold one (see the module docstring)."""

    overview_gold: str
    overview_yours: str
    windows: list[dict[str, Any]]  # [{index, gold, yours, agree}] for each of the caption's windows
    segmentation_gold: str
    segmentation_yours: str
    missed: list[tuple[str, str]] = field(default_factory=list)
    added: list[tuple[str, str]] = field(default_factory=list)
    matched: list[tuple[str, str]] = field(default_factory=list)

    @property
    def overview_agrees(self) -> bool:
        return self.overview_gold == self.overview_yours

    @property
    def windows_agreeing(self) -> int:
        return sum(1 for row in self.windows if row["agree"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "overview": {"gold": self.overview_gold, "yours": self.overview_yours, "agree": self.overview_agrees},
            "segmentation": {
                "gold": self.segmentation_gold,
                "yours": self.segmentation_yours,
                "agree": self.segmentation_gold == self.segmentation_yours,
            },
            "windows": self.windows,
            "modes": {
                "matched": [{"unit": unit, "mode": mode} for unit, mode in self.matched],
                "missed": [{"unit": unit, "mode": mode} for unit, mode in self.missed],
                "added": [{"unit": unit, "mode": mode} for unit, mode in self.added],
            },
        }


def _unit_order(pair: tuple[str, str]) -> tuple[int, int, str]:
    unit, mode = pair
    if unit == "overview":
        return (0, 0, mode)
    if unit == "segmentation":
        return (2, 0, mode)
    return (1, int(unit.split()[-1]), mode)


def verdict_compare(
    gold: Mapping[str, Any], yours: Mapping[str, Any], *, window_indexes: Iterable[int]
) -> ItemComparison:
    """Compare a verdict (``yours``) with the gold one on a caption whose windows have
    ``window_indexes``."""
    gold_windows, your_windows = _window_verdicts(gold), _window_verdicts(yours)
    windows = []
    for index in sorted(window_indexes):
        g, y = gold_windows.get(index, ACCEPT), your_windows.get(index, ACCEPT)
        windows.append({"index": index, "gold": g, "yours": y, "agree": g == y})
    gold_modes, your_modes = _unit_modes(gold), _unit_modes(yours)
    return ItemComparison(
        overview_gold=_verdict((gold.get("overview") or {}).get("verdict")),
        overview_yours=_verdict((yours.get("overview") or {}).get("verdict")),
        windows=windows,
        segmentation_gold=_verdict((gold.get("segmentation") or {}).get("verdict")),
        segmentation_yours=_verdict((yours.get("segmentation") or {}).get("verdict")),
        missed=sorted(gold_modes - your_modes, key=_unit_order),
        added=sorted(your_modes - gold_modes, key=_unit_order),
        matched=sorted(gold_modes & your_modes, key=_unit_order),
    )


@dataclass(frozen=True)
class PassRule:
    """The practice set's pass rule (the study's settings ``practice_min_*``)."""

    min_items: int
    min_overview_agreement: float
    min_mode_f1: float
    min_window_agreement: float

    @classmethod
    def of(cls, study: Any) -> PassRule:
        return cls(
            min_items=int(study.practice_min_items),
            min_overview_agreement=float(study.practice_min_overview_agreement),
            min_mode_f1=float(study.practice_min_mode_f1),
            min_window_agreement=float(study.practice_min_window_agreement),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "min_items": self.min_items,
            "min_overview_agreement": self.min_overview_agreement,
            "min_mode_f1": self.min_mode_f1,
            "min_window_agreement": self.min_window_agreement,
        }


def mode_f1(matched: int, missed: int, added: int) -> float:
    """Micro F1 of failure modes: 2·TP / (2·TP + FN + FP); 1 when neither side named a mode."""
    denominator = 2 * matched + missed + added
    return 1.0 if denominator == 0 else 2 * matched / denominator


def _percent(value: float) -> str:
    return f"{100 * value:.0f} %"


def practice_evaluate(items: Sequence[ItemComparison], rule: PassRule) -> dict[str, Any]:
    """Whether an attempt at the practice set passes ``rule``, with its figures and the reasons
    (one sentence per part of the rule, those that failed first)."""
    n = len(items)
    overview = sum(1 for item in items if item.overview_agrees) / n if n else 0.0
    matched = sum(len(item.matched) for item in items)
    missed = sum(len(item.missed) for item in items)
    added = sum(len(item.added) for item in items)
    f1 = mode_f1(matched, missed, added) if n else 0.0
    window_total = sum(len(item.windows) for item in items)
    windows = sum(item.windows_agreeing for item in items) / window_total if window_total else None
    failed: list[str] = []
    held: list[str] = []
    (held if n >= rule.min_items else failed).append(
        f"{n} practice item{'s' if n != 1 else ''} done; the rule asks for at least {rule.min_items}."
    )
    (held if n and overview >= rule.min_overview_agreement else failed).append(
        f"Overview verdicts agreed with the gold ones on {_percent(overview)} of the items; "
        f"the rule asks for at least {_percent(rule.min_overview_agreement)}."
    )
    (held if n and f1 >= rule.min_mode_f1 else failed).append(
        f"Failure-mode F1 against the gold modes was {f1:.2f} ({matched} matched, {missed} missed, "
        f"{added} added); the rule asks for at least {rule.min_mode_f1:.2f}."
    )
    if windows is None:
        held.append("The practice items have no windows: window verdicts are not part of this attempt.")
    else:
        (held if windows >= rule.min_window_agreement else failed).append(
            f"Window verdicts agreed with the gold ones on {_percent(windows)} of the windows; "
            f"the rule asks for at least {_percent(rule.min_window_agreement)}."
        )
    return {
        "passed": not failed,
        "items": n,
        "overview_agreement": overview,
        "mode_f1": f1,
        "modes": {"matched": matched, "missed": missed, "added": added},
        "window_agreement": windows,
        "windows": window_total,
        "rule": rule.as_dict(),
        "reasons": failed + held,
        "failed": failed,
    }


def gold_check_due(*, seed: int, annotator_id: int, slot: int, rate: float) -> bool:
    """Whether the ``slot``-th item an annotator starts is a hidden gold check (see the module
    docstring). Deterministic: a SHA-256 of the seed, the annotator and the slot, as a uniform
    number in [0, 1)."""
    if rate <= 0:
        return False
    digest = hashlib.sha256(f"{seed}:{annotator_id}:{slot}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def gold_checks_needed(*, rate: float, queue_items: int) -> int:
    """The gold checks an annotator with ``queue_items`` real items meets at ``rate`` (a share of
    all their items, gold included), on average: rate / (1 - rate) per real item, rounded down."""
    if rate <= 0 or queue_items <= 0:
        return 0
    return math.floor(rate / (1 - rate) * queue_items + 1e-9)


def gold_rate_problem(*, rate: float, pool: int, largest_queue: int) -> str | None:
    """Why the gold pool (gold items outside the practice set) cannot serve ``rate``, or None.

    Each annotator meets each gold item at most once, so the pool must hold at least the checks
    the largest queue needs on average (:func:`gold_checks_needed`); beyond that the queue goes
    on without gold."""
    if rate <= 0:
        return None
    if pool == 0:
        return (
            "There are no gold items outside the practice set to check with: make gold items "
            "(and leave some out of the practice set) before setting a gold rate."
        )
    needed = gold_checks_needed(rate=rate, queue_items=largest_queue)
    if needed > pool:
        servable = pool / (pool + largest_queue) if largest_queue else GOLD_RATE_MAX
        return (
            f"At a gold rate of {_percent(rate)}, an annotator with {largest_queue} items meets about "
            f"{needed} gold checks, but the pool has {pool} gold item{'s' if pool != 1 else ''} outside "
            f"the practice set: make more gold items or set the rate to at most {100 * servable:.1f} %."
        )
    return None


def binomial_interval(n: int, p: float, *, tail: float = 0.0005) -> tuple[int, int]:
    """The central interval of Binomial(n, p) holding all but ``tail`` on each side: the
    smallest k_low with P(X < k_low) <= tail and the largest k_high with P(X > k_high) <= tail."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    low, cumulative = 0, 0.0
    while cumulative + pmf[low] <= tail:
        cumulative += pmf[low]
        low += 1
    high, cumulative = n, 0.0
    while cumulative + pmf[high] <= tail:
        cumulative += pmf[high]
        high -= 1
    return low, high

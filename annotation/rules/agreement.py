"""Agreement between annotators on nominal judgements: Cohen's kappa and Krippendorff's alpha.

Pure functions without Django. A *unit* is one thing judged (an overview, a window, a
caption's segmentation) and carries the values the annotators gave it, one per annotator,
with None for an annotator who did not judge it. Values are any hashable labels
("accept"/"reject", True/False for "tagged this mode").

Both coefficients are None where they are undefined: no pairable unit, or no variation at
all (every value the same), where chance agreement is already perfect.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations


@dataclass(frozen=True)
class Agreement:
    """Kappa between the first two annotators of each unit, alpha over all of them."""

    kappa: float | None
    alpha: float | None
    items: int  # units judged by at least two annotators


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's (1960) kappa of two annotators who judged the same items, in the same order.

    kappa = (p_o - p_e) / (1 - p_e), with p_o the observed share of agreement and p_e the
    agreement expected from each annotator's own marginal distribution.
    """
    if len(first) != len(second):
        raise ValueError(
            f"both annotators must judge the same items ({len(first)} != {len(second)})"
        )
    n = len(first)
    if n == 0:
        return None
    observed = sum(1 for a, b in zip(first, second, strict=True) if a == b) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's alpha for nominal data, any number of annotators, missing values allowed.

    Built from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability"): every ordered pair of values within a unit of m values adds 1/(m-1);
    units with fewer than two values are not pairable and are left out.
    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k.
    """
    coincidences: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        values = [value for value in unit if value is not None]
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(values, 2):
            coincidences[(a, b)] += 1.0 / (m - 1)
    totals: defaultdict[Hashable, float] = defaultdict(float)
    for (a, _), weight in coincidences.items():
        totals[a] += weight
    n = sum(totals.values())
    if n <= 1:
        return None
    disagreement = sum(weight for (a, b), weight in coincidences.items() if a != b)
    chance = sum(totals[a] * totals[b] for a in totals for b in totals if a != b)
    if chance == 0:
        return None
    return 1.0 - (n - 1) * disagreement / chance


def agreement(units: Iterable[Sequence[Hashable | None]]) -> Agreement:
    """Both coefficients over `units`; kappa uses each unit's first two values (in order)."""
    pairable = [[value for value in unit if value is not None] for unit in units]
    pairable = [values for values in pairable if len(values) >= 2]
    kappa = cohen_kappa([values[0] for values in pairable], [values[1] for values in pairable])
    return Agreement(kappa=kappa, alpha=krippendorff_alpha_nominal(pairable), items=len(pairable))

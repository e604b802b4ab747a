"""Ranking models across judges: Borda aggregation, inter-judge agreement, bootstrap stability.

CLIP-CC-Bench's rule (METRICS.md section 3): for each judge rank the V models by their mean score
(HM-CF, higher is better); a model gets ``V - rank`` points from that judge (the top model V - 1);
the final order is by total points, ties broken by the mean score across judges (the mean of the
per-judge means). Models still tied after that keep the order in which they were given, so the
result is deterministic. Within one judge, models with exactly equal means share the better rank
("min" ranking) and so get the same points.

Inputs are plain mappings ``means[judge][model]`` or arrays ``scores[judge, model, item]``; every
judge must score the same models (and, for the bootstrap, the same items).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt
from scipy import stats

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def model_means(
    item_scores: Mapping[str, Mapping[str, Sequence[float]]],
) -> dict[str, dict[str, float]]:
    """Return ``means[judge][model]``: the mean over items of each judge's per-item scores.

    Refuses a model with no scored item.
    """
    means: dict[str, dict[str, float]] = {}
    for judge, per_model in item_scores.items():
        means[judge] = {}
        for model, values in per_model.items():
            if len(values) == 0:
                raise ValueError(f"judge {judge!r} has no scores for model {model!r}")
            means[judge][model] = float(np.mean(np.asarray(values, dtype=np.float64)))
    return means


def _as_matrix(means: Mapping[str, Mapping[str, float]]) -> tuple[list[str], list[str], FloatArray]:
    """Return (judges, models, array[judge, model]) with models in the first judge's order."""
    judges = list(means)
    if not judges:
        raise ValueError("no judges")
    models = list(means[judges[0]])
    for judge in judges:
        if set(means[judge]) != set(models):
            raise ValueError(f"judge {judge!r} does not score the same models as {judges[0]!r}")
    matrix = np.array([[means[j][m] for m in models] for j in judges], dtype=np.float64)
    return judges, models, matrix


def _borda_core(means: FloatArray) -> tuple[IntArray, FloatArray, IntArray]:
    """Borda on arrays ``means[..., judge, model]``, vectorised over leading axes.

    Returns (points[..., model], mean across judges[..., model], final rank[..., model]), ranks
    starting at 1.
    """
    n_models = means.shape[-1]
    per_judge_rank = stats.rankdata(-means, method="min", axis=-1).astype(np.int64)
    points = (n_models - per_judge_rank).sum(axis=-2)
    across = means.mean(axis=-2)
    # lexsort sorts by the last key first and is stable, so remaining ties keep model order.
    order = np.lexsort((-across, -points), axis=-1)
    final = np.empty_like(order)
    positions = np.broadcast_to(np.arange(1, n_models + 1), order.shape)
    np.put_along_axis(final, order, positions, axis=-1)
    return points, across, final


@dataclass(frozen=True)
class BordaRow:
    """One model's place in a Borda leaderboard."""

    rank: int
    model: str
    points: int
    mean_score: float


def borda(means: Mapping[str, Mapping[str, float]]) -> list[BordaRow]:
    """Return the Borda leaderboard, best first, from ``means[judge][model]``."""
    _, models, matrix = _as_matrix(means)
    points, across, final = _borda_core(matrix)
    rows = [
        BordaRow(int(final[i]), model, int(points[i]), float(across[i]))
        for i, model in enumerate(models)
    ]
    return sorted(rows, key=lambda row: row.rank)


def judge_ranking(scores: Mapping[str, float]) -> list[str]:
    """Return the models of one judge, best (highest score) first; ties keep the given order."""
    return sorted(scores, key=lambda model: -scores[model])


def kendall_tau(
    means: Mapping[str, Mapping[str, float]],
) -> dict[tuple[str, str], float]:
    """Return Kendall's tau-b between every pair of judges' model scores.

    Keys are (judge_a, judge_b) pairs in the order the judges were given; 1 means both judges
    order the models identically, -1 exactly reversed.
    """
    judges, _, matrix = _as_matrix(means)
    taus: dict[tuple[str, str], float] = {}
    for a, b in combinations(range(len(judges)), 2):
        taus[(judges[a], judges[b])] = float(stats.kendalltau(matrix[a], matrix[b]).statistic)
    return taus


def kendalls_w(means: Mapping[str, Mapping[str, float]]) -> float:
    """Return Kendall's coefficient of concordance W across judges, in [0, 1].

    Each judge ranks the models (higher score = better, tied scores get average ranks);
    W = 12 S / (m^2 (n^3 - n) - m sum T), with the usual correction T for tied ranks. 1 means all
    judges agree on the order; 0 no agreement. Needs at least two models.
    """
    _, _, matrix = _as_matrix(means)
    m, n = int(matrix.shape[0]), int(matrix.shape[1])
    if n < 2:
        raise ValueError("Kendall's W needs at least two models")
    ranks = stats.rankdata(-matrix, method="average", axis=1)
    totals = ranks.sum(axis=0)
    s = float(((totals - totals.mean()) ** 2).sum())
    ties = 0.0
    for row in matrix:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    denominator = m**2 * (n**3 - n) - m * ties
    if denominator == 0:
        return 1.0  # every judge ties every model: trivially concordant
    return 12.0 * s / denominator


@dataclass(frozen=True)
class RankStability:
    """Each model's final Borda rank over bootstrap resamples of the items.

    ``ranks[b, i]`` is model i's final rank (1 = best) in resample b; ``observed[i]`` its rank on
    the full data; ``items[i]`` the fewest items model i has under any judge. A model with fewer
    than ``min_items`` items has no stability (NaN share, no interval): resampling one item
    draws that item every time, so its rank would look certain whatever the data.
    """

    models: tuple[str, ...]
    ranks: IntArray
    observed: IntArray
    items: IntArray
    min_items: int

    @property
    def n_boot(self) -> int:
        """Number of bootstrap resamples."""
        return int(self.ranks.shape[0])

    def estimable(self) -> dict[str, bool]:
        """Return, per model, whether it has enough items for a stability."""
        return {m: bool(self.items[i] >= self.min_items) for i, m in enumerate(self.models)}

    def distribution(self) -> FloatArray:
        """Return ``p[i, r - 1]``: the share of resamples in which model i got rank r (NaN rows
        for a model without enough items)."""
        n_models = len(self.models)
        counts = np.stack(
            [np.bincount(self.ranks[:, i] - 1, minlength=n_models) for i in range(n_models)]
        )
        shares = counts / self.n_boot
        shares[self.items < self.min_items] = np.nan
        return shares

    def interval(self, level: float = 0.95) -> dict[str, tuple[int, int] | None]:
        """Return each model's central rank interval covering ``level`` of the resamples (None
        for a model without enough items)."""
        tail = (1.0 - level) / 2.0 * 100.0
        low = np.percentile(self.ranks, tail, axis=0, method="lower")
        high = np.percentile(self.ranks, 100.0 - tail, axis=0, method="higher")
        enough = self.estimable()
        return {m: (int(low[i]), int(high[i])) if enough[m] else None
                for i, m in enumerate(self.models)}

    def share_at_observed_rank(self) -> dict[str, float]:
        """Return, per model, the share of resamples that reproduce its observed rank (NaN for
        a model without enough items)."""
        same = (self.ranks == self.observed[np.newaxis, :]).mean(axis=0)
        enough = self.estimable()
        return {m: float(same[i]) if enough[m] else float("nan")
                for i, m in enumerate(self.models)}


def scores_array(
    item_scores: Mapping[str, Mapping[str, Mapping[str, float]]],
) -> tuple[list[str], list[str], list[str], FloatArray]:
    """Turn ``item_scores[judge][model][item] -> score`` into (judges, models, items, array).

    The array is indexed ``[judge, model, item]``. Refuses data in which some judge/model lacks
    an item that another has, since a bootstrap must resample the same items everywhere.
    """
    judges = list(item_scores)
    if not judges:
        raise ValueError("no judges")
    models = list(item_scores[judges[0]])
    if not models:
        raise ValueError("no models")
    items = list(item_scores[judges[0]][models[0]])
    wanted = set(items)
    array = np.empty((len(judges), len(models), len(items)), dtype=np.float64)
    for j, judge in enumerate(judges):
        if set(item_scores[judge]) != set(models):
            raise ValueError(f"judge {judge!r} does not score the same models")
        for i, model in enumerate(models):
            per_item = item_scores[judge][model]
            if set(per_item) != wanted:
                raise ValueError(f"{judge!r}/{model!r} does not score the same items")
            array[j, i] = [per_item[item] for item in items]
    return judges, models, items, array


def bootstrap_ranks(
    scores: npt.ArrayLike,
    models: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    chunk: int = 256,
    min_items: int,
) -> RankStability:
    """Resample items with replacement ``n_boot`` times and re-rank the models by Borda.

    ``scores[judge, model, item]`` holds per-item scores; NaN marks an item a model has no
    score for under a judge, and that model's mean is then over its own drawn items (a model
    with none of its items drawn ranks last in that resample). Each resample draws as many
    items as there are, with replacement, from a generator seeded with ``seed`` (same seed,
    same result); per-judge means, Borda points and the mean-score tie-break are recomputed
    for all resamples at once, ``chunk`` at a time.

    A model with fewer than ``min_items`` items under some judge gets no stability (see
    :class:`RankStability`); the profile's leaderboard passes its minimum for a clip bootstrap,
    :data:`scoring.metrics.analysis.samples.MIN_CLIPS`.
    """
    data = np.asarray(scores, dtype=np.float64)
    if data.ndim != 3 or data.shape[1] != len(models):
        raise ValueError("scores must be shaped [judge, model, item] with one row per model")
    n_items = data.shape[2]
    if n_items == 0 or n_boot < 1:
        raise ValueError("need at least one item and one resample")
    rng = np.random.default_rng(seed)
    uniform = np.full(n_items, 1.0 / n_items)
    ranks = np.empty((n_boot, len(models)), dtype=np.int64)
    present = ~np.isnan(data)
    complete = bool(present.all())
    filled = np.where(present, data, 0.0)
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        # A multinomial draw gives how often each item is picked: the same as resampling indices.
        weights = rng.multinomial(n_items, uniform, size=size).astype(np.float64)
        if complete:
            means = np.einsum("jmn,bn->bjm", data, weights) / n_items
        else:
            means = _own_means(filled, present, weights)
        ranks[start : start + size] = _borda_core(means)[2]
    if complete:
        observed = _borda_core(data.mean(axis=2))[2]
    else:
        observed = _borda_core(_own_means(filled, present, np.ones((1, n_items)))[0])[2]
    items = present.sum(axis=2).min(axis=0).astype(np.int64)
    return RankStability(models=tuple(models), ranks=ranks, observed=observed, items=items,
                         min_items=min_items)


def _own_means(filled: FloatArray, present: npt.NDArray[np.bool_], weights: FloatArray
               ) -> FloatArray:
    """Weighted means over each (judge, model)'s own items: (resamples, judge, model); -inf
    where a model has none of its items in a resample (it then ranks last)."""
    top = np.einsum("jmn,bn->bjm", filled, weights)
    bottom = np.einsum("jmn,bn->bjm", present.astype(np.float64), weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), -np.inf))

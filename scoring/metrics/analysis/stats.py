"""Statistical building blocks: exact binomial intervals, vectorised clip bootstraps, AUC.

The bootstraps here all resample *clips* (the unit that is shared by the captions of different
models and by the windows of one caption) and represent a set of resamples as a matrix of
counts ``W`` (resamples x clips): ``W[b, c]`` is how many times clip ``c`` was drawn in resample
``b``. Any statistic that is a ratio of sums over clips is then two matrix products,
``(W @ numerators) / (W @ denominators)``, with no Python loop over resamples.
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy import stats

ALPHA = 0.05


def rng_for(seed: int, stream: str) -> np.random.Generator:
    """Return a generator for one named stream of ``seed``.

    Each table draws from its own stream, so its numbers depend only on the seed and its own
    inputs, never on which other tables were computed or in which order.
    """
    return np.random.default_rng([int(seed), zlib.crc32(stream.encode())])


def clopper_pearson(
    k: np.ndarray | int, n: np.ndarray | int, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """Return the exact (Clopper-Pearson) ``1 - alpha`` interval for ``k`` successes in ``n``.

    Vectorised over ``k`` and ``n``; the bounds are shares in [0, 1]; NaN where ``n == 0``.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    empty = n <= 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def clip_resample_counts(n_clips: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Return ``W`` (resamples x n_clips, float): how often each clip is drawn in each resample.

    Each resample draws ``n_clips`` clips with replacement, so every row sums to ``n_clips``.
    """
    if n_clips == 0:
        return np.zeros((resamples, 0))
    draws = rng.integers(0, n_clips, size=(resamples, n_clips))
    flat = (draws + n_clips * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * n_clips)
    return counts.reshape(resamples, n_clips).astype(float)


def ratio_resamples(weights: np.ndarray, numerators: np.ndarray, denominators: np.ndarray
                    ) -> np.ndarray:
    """Return resampled ratios of clip sums, (resamples x k); NaN where a denominator is 0.

    ``numerators`` and ``denominators`` are (clips x k) per-clip sums.
    """
    top = weights @ numerators
    bottom = weights @ denominators
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)


def percentile_interval(
    values: np.ndarray, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """Return the percentile interval of resampled values along axis 0, ignoring NaN resamples.

    NaN where every resample of a column is NaN.
    """
    values = np.asarray(values, dtype=float)
    if values.shape[0] == 0:
        nan = np.full(values.shape[1:], np.nan)
        return nan, nan.copy()
    valid = ~np.isnan(values).all(axis=0)
    safe = np.where(valid, values, 0.0)
    low, high = np.nanpercentile(safe, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return np.where(valid, low, np.nan), np.where(valid, high, np.nan)


def bonferroni(p_values: np.ndarray, comparisons: int) -> np.ndarray:
    """Return Bonferroni-adjusted p-values, ``min(1, p * comparisons)`` (NaN stays NaN)."""
    return np.asarray(np.minimum(1.0, np.asarray(p_values, dtype=float) * comparisons))


def binomial_expected(units: float, trials: int, p: float) -> np.ndarray:
    """Return the expected number of units with 0..trials successes under Binomial(trials, p)."""
    return np.asarray(units * stats.binom.pmf(np.arange(trials + 1), trials, p), dtype=float)


def clip_sums(codes: np.ndarray, values: np.ndarray, n_clips: int) -> np.ndarray:
    """Return per-clip sums of ``values`` (rows) grouped by clip ``codes``: (n_clips x k)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    out = np.zeros((n_clips, values.shape[1]))
    np.add.at(out, codes, values)
    return out


# --- AUC --------------------------------------------------------------------------------------


class ClipAUC:
    """AUC of a score for telling accepted from rejected captions, decomposed by clip.

    The AUC is the probability that a random accepted caption scores higher than a random
    rejected one (ties count half). Writing ``M[c, d]`` for the sum of those wins over accepted
    captions of clip ``c`` and rejected captions of clip ``d``, a clip resample with counts ``w``
    has AUC ``w' M w / ((w . n_acc) (w . n_rej))``: a quadratic form, so every resample of a
    bootstrap is one row of a matrix product. The *matched* AUC compares accepted and rejected
    captions of the same clip only: ``trace(M) / sum(n_acc * n_rej)``.
    """

    def __init__(self, scores: np.ndarray, accepted: np.ndarray, clip_codes: np.ndarray,
                 n_clips: int, *, higher_accepts: bool = True) -> None:
        scores = np.asarray(scores, dtype=float)
        keep = ~np.isnan(scores)
        scores, accepted, codes = scores[keep], np.asarray(accepted)[keep], clip_codes[keep]
        if not higher_accepts:
            scores = -scores
        self.pair_wins = _pair_wins(scores[accepted], codes[accepted], scores[~accepted],
                                    codes[~accepted], n_clips)
        self.n_accepted = np.bincount(codes[accepted], minlength=n_clips).astype(float)
        self.n_rejected = np.bincount(codes[~accepted], minlength=n_clips).astype(float)

    def auc(self) -> float:
        """Return the pooled AUC (NaN without both an accepted and a rejected caption)."""
        pairs = self.n_accepted.sum() * self.n_rejected.sum()
        return float(self.pair_wins.sum() / pairs) if pairs else float("nan")

    def matched_auc(self) -> float:
        """Return the AUC over same-clip pairs only (NaN when no clip has both verdicts)."""
        pairs = float(self.n_accepted @ self.n_rejected)
        return float(np.trace(self.pair_wins) / pairs) if pairs else float("nan")

    def matched_clips(self) -> int:
        """Return how many clips have both an accepted and a rejected caption."""
        return int(((self.n_accepted > 0) & (self.n_rejected > 0)).sum())

    def resampled(self, weights: np.ndarray, chunk: int = 5000) -> tuple[np.ndarray, np.ndarray]:
        """Return (pooled, matched) AUC for each row of clip counts ``weights``."""
        pooled, matched = [], []
        diagonal = np.diag(self.pair_wins)
        same_clip_pairs = self.n_accepted * self.n_rejected
        for start in range(0, weights.shape[0], chunk):
            w = weights[start:start + chunk]
            wins = np.einsum("bc,bc->b", w @ self.pair_wins, w)
            pairs = (w @ self.n_accepted) * (w @ self.n_rejected)
            pooled.append(_safe_divide(wins, pairs))
            matched.append(_safe_divide(w @ diagonal, w @ same_clip_pairs))
        return np.concatenate(pooled), np.concatenate(matched)


def _pair_wins(acc: np.ndarray, acc_clips: np.ndarray, rej: np.ndarray, rej_clips: np.ndarray,
               n_clips: int) -> np.ndarray:
    """Return M (clips x clips): wins of accepted captions of clip c over rejected ones of d."""
    wins = np.zeros((n_clips, n_clips))
    if len(acc) == 0 or len(rej) == 0:
        return wins
    acc_order = np.argsort(acc_clips, kind="stable")
    rej_order = np.argsort(rej_clips, kind="stable")
    acc, acc_clips = acc[acc_order], acc_clips[acc_order]
    rej, rej_clips = rej[rej_order], rej_clips[rej_order]
    # Why a dense comparison: a few thousand by a few thousand captions is cheap and exact.
    pairs = (acc[:, None] > rej[None, :]) + 0.5 * (acc[:, None] == rej[None, :])
    acc_present, acc_starts = np.unique(acc_clips, return_index=True)
    rej_present, rej_starts = np.unique(rej_clips, return_index=True)
    by_clip = np.add.reduceat(np.add.reduceat(pairs, rej_starts, axis=1), acc_starts, axis=0)
    wins[np.ix_(acc_present, rej_present)] = by_clip
    return wins


def _safe_divide(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """Return top / bottom, NaN where bottom is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), np.nan)

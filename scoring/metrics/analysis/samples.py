"""Minimum-sample rules: when a number of the profile is an estimate, and when it is noise.

One place for every table (docs/profile-tables.md, "Minimum samples", says the same):

- **A clip bootstrap needs at least** :data:`MIN_CLIPS` **clips.** Every resample of one clip
  draws that clip, so its interval has zero width whatever the data: such an interval is not
  computed (NaN), and :func:`clip_weights` is what every table draws its resamples from.
- **A rate compared between groups needs at least** :data:`MIN_GROUP` **captions in each
  group** (and the groups' captions on at least :data:`MIN_CLIPS` clips): a difference of rates
  over a group of one caption moves by 100 points with that caption. Below it the difference and
  its interval are blank and the row says what it needs (:func:`needs_group`).
- **An additive-model contrast must be identified**: on one clip, or where a model's captions
  all share one annotator who annotated nothing else, the model effect cannot be told from the
  annotator's (:func:`estimable`), and the adjusted gap is blank with the reason.
- **A flag ("separates", "excludes zero") is set only on a non-degenerate interval**: finite
  bounds and a width above :data:`MIN_WIDTH` (:func:`excludes_zero`). A zero-width interval
  (one clip, or every resample equal) carries no flag.
- **A flag needs a clear margin**: the bound nearer zero must lie beyond :data:`FLAG_RTOL`
  times the table's full scale (:data:`POINTS` for points and percentages) from zero. A bound
  of -1.9e-14 points is a rounding error of a refit, not evidence: it carries no flag, and
  :func:`snap_to_zero` writes it as 0.
- **Each row's clip bootstrap needs** :data:`MIN_CLIPS` **clips of its own** too: a model
  whose windows (or whose difficult or easy captions) lie on one clip gets no interval
  (:func:`blank_on_few_clips`), though the study has more clips.
- **A rank stability needs** :data:`MIN_CLIPS` **clips of the model's own** (the leaderboard's
  share at rank and rank interval, :func:`scoring.metrics.ranking.bootstrap_ranks`): below it
  they are blank and ``stability_note`` says why.

:func:`flag_intervals` names each flag column of a table and the interval it reads, so a test
can check every flag of every table against its interval.
"""

from __future__ import annotations

import numpy as np

from scoring.metrics.analysis.stats import clip_resample_counts

#: Fewest clips a clip bootstrap is computed over.
MIN_CLIPS = 2
#: Fewest captions in each compared group (first vs later exposure, ...).
MIN_GROUP = 5
#: Narrowest interval (in the table's unit) that can carry a flag; narrower is degenerate.
MIN_WIDTH = 1e-9
#: Full scale of a table in points or percentages (0-100): what :data:`FLAG_RTOL` is relative to.
POINTS = 100.0
#: Margin a flag needs, relative to the table's full scale: a bound within
#: ``FLAG_RTOL * full_scale`` of zero counts as zero (1e-7 points). Far below any real gap
#: (100 / clips points at the least) and far above floating-point noise (about 1e-14 points).
FLAG_RTOL = 1e-9
#: Relative tolerance of the identifiability check of a contrast.
_ESTIMABLE_RTOL = 1e-8

#: The rules in one sentence each, for the notes of report.html and the manifest.
SAMPLES_NOTE = (
    f"Minimum samples: no clip-bootstrap interval over fewer than {MIN_CLIPS} clips (a rank "
    f"stability needs {MIN_CLIPS} clips of the model's own); a flag (separates, "
    f"*_excludes_zero) only on an interval wider than {MIN_WIDTH:g} whose bound nearer zero "
    f"lies more than {FLAG_RTOL:g} of the table's full scale from it ({FLAG_RTOL * POINTS:g} "
    f"points; closer is rounding error, written as 0); a comparison of groups needs "
    f"{MIN_GROUP} captions in each group; an adjusted gap the additive model cannot identify "
    f"is blank. docs/profile-tables.md, 'Minimum samples', says why.")

#: Flags whose interval is not named after them: flag -> (low column, high column).
_NAMED_FLAGS: dict[str, tuple[str, str]] = {
    "separates": ("ci_low", "ci_high"),
    "adjusted_separates": ("adjusted_ci_low", "adjusted_ci_high"),
}
_SUFFIX = "_excludes_zero"


def flag_intervals(columns: list[str] | tuple[str, ...]) -> dict[str, tuple[str, str]]:
    """Return {flag column: (interval low, interval high)} of a table's columns: the flags of
    :data:`_NAMED_FLAGS`, and every ``<x>_excludes_zero`` reading ``<x>_ci_low``/``<x>_ci_high``."""
    found = {flag: pair for flag, pair in _NAMED_FLAGS.items() if flag in columns}
    for column in columns:
        if column.endswith(_SUFFIX):
            stem = column[: -len(_SUFFIX)]
            found[column] = (f"{stem}_ci_low", f"{stem}_ci_high")
    return found


def clip_weights(n_clips: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Return clip-bootstrap counts (resamples x clips), all NaN below :data:`MIN_CLIPS` clips.

    NaN counts make every resampled statistic NaN, so every interval built from them is NaN
    (not computed) instead of a zero-width interval around the point estimate.
    """
    weights = clip_resample_counts(n_clips, resamples, rng)
    if 0 < n_clips < MIN_CLIPS:
        return np.full_like(weights, np.nan)
    return weights


def on_few_clips(denominators: np.ndarray) -> np.ndarray:
    """True for each column of per-clip denominators (clips x rows: a row's units on each clip)
    whose units lie on fewer than :data:`MIN_CLIPS` clips: the row's clip-bootstrap interval
    would resample one clip of its own, so it is not computed."""
    return np.asarray((np.asarray(denominators) > 0).sum(axis=0) < MIN_CLIPS)


def blank_on_few_clips(low: np.ndarray, high: np.ndarray, *denominators: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Return ``low`` and ``high`` with NaN for every row that some ``denominators`` (clips x
    rows) puts on fewer than :data:`MIN_CLIPS` clips (:func:`on_few_clips`)."""
    few = np.zeros(np.shape(low), dtype=bool)
    for counts in denominators:
        few |= on_few_clips(counts)
    return (np.where(few, np.nan, np.asarray(low, dtype=float)),
            np.where(few, np.nan, np.asarray(high, dtype=float)))


def degenerate(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """True where an interval is missing, infinite or narrower than :data:`MIN_WIDTH`."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.asarray(~np.isfinite(low) | ~np.isfinite(high) | (high - low <= MIN_WIDTH))


def flag_margin(full_scale: float) -> float:
    """Return how far from zero a bound must lie to carry a flag, in the table's unit."""
    return FLAG_RTOL * full_scale


def excludes_zero(low: np.ndarray, high: np.ndarray, *, full_scale: float) -> np.ndarray:
    """True where a non-degenerate interval lies wholly above or below zero by a clear margin
    (:func:`flag_margin` of the table's ``full_scale``, :data:`POINTS` for points)."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    margin = flag_margin(full_scale)
    with np.errstate(invalid="ignore"):
        return np.asarray(~degenerate(low, high) & ((low > margin) | (high < -margin)))


def snap_to_zero(values: np.ndarray, *, full_scale: float) -> np.ndarray:
    """Return ``values`` with those within :func:`flag_margin` of zero set to exactly 0 (a
    refit's rounding error shown as what it is); NaN stays NaN."""
    values = np.array(values, dtype=float)
    with np.errstate(invalid="ignore"):
        values[np.abs(values) <= flag_margin(full_scale)] = 0.0
    return values


def needs_group(sizes: dict[str, int], clips: dict[str, int], min_group: int = MIN_GROUP) -> str:
    """Return what a comparison of these groups needs ('' when each is big enough).

    ``sizes`` and ``clips`` give, per group name, its captions and the clips they are on. An
    empty group needs nothing said here: its rate is blank already.
    """
    if any(n == 0 for n in sizes.values()):
        return ""
    small = [f"{name}: {n}" for name, n in sizes.items() if n < min_group]
    if small:
        return (f"not computable: needs at least {min_group} captions in each group "
                f"({', '.join(small)})")
    # min_group=1 turns the group rules off (tests of the arithmetic); the clip rule with it.
    few = [f"{name}: {n}" for name, n in clips.items() if n < min(MIN_CLIPS, min_group)]
    if few:
        return (f"not computable: needs each group on at least {MIN_CLIPS} clips "
                f"({', '.join(few)})")
    return ""


def estimable(normal: np.ndarray, contrast: np.ndarray) -> bool:
    """Whether ``contrast`` · beta is identified by a least-squares fit with normal matrix
    ``normal`` (X'X): true iff the contrast lies in the row space of X."""
    if not np.all(np.isfinite(normal)):
        return False
    projected = normal @ np.linalg.pinv(normal, rtol=1e-10, hermitian=True) @ contrast
    scale = max(1.0, float(np.abs(contrast).max()))
    return bool(np.allclose(projected, contrast, atol=_ESTIMABLE_RTOL * scale, rtol=0))

"""Study planner: how many clips (and annotators) a study needs, estimated from a pilot.

From the pilot's final overview verdicts (a clips x models matrix of rejections), simulated
studies of ``n`` clips are drawn by resampling the pilot, and the smallest ``n`` is found at
which a chosen share (90% by default) of them reaches the target:

- **Rates**: every model's overview rejection rate has a 95% Clopper-Pearson interval (as in
  Tables 5 and 7) no wider than ``± half_width`` points.
- **Gaps**: two models whose true gap in rejection rate is ``gap`` points are separated: the
  95% interval of their paired difference over clips (normal, ``mean ± z · sd / sqrt(n)``,
  Bonferroni over all pairs as Table 15 when ``comparisons`` > 1) excludes zero.

Assumptions (said with every plan, :data:`ASSUMPTIONS`): new clips are drawn from the same
population as the pilot's (clips are resampled whole, so what makes a clip hard for every model
is kept); every model captions every clip; annotators judge as the pilot's did; the pilot's own
uncertainty is included by resampling the pilot before each simulated study (a two-stage
bootstrap), which makes the plan conservative for a small pilot; for a gap, each resampled
pilot's paired differences are shifted to have exactly the chosen gap, keeping their
clip-to-clip spread.
Annotators: each caption needs one annotation (``overlap`` more for double annotation); with a
one-model-per-clip design a study needs at least as many annotators as captions per clip, and
each annotator does at most ``captions_per_annotator``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from scoring.metrics.analysis.samples import MIN_CLIPS
from scoring.metrics.analysis.stats import clopper_pearson, rng_for
from scoring.metrics.analysis.tidy import model_order

ASSUMPTIONS = (
    "New clips are like the pilot's (clips resampled whole); every model captions every clip; "
    "annotators judge as the pilot's did; the pilot's own uncertainty is included by "
    "resampling it before each simulated study; a gap keeps the pilot's clip-to-clip spread of "
    "paired differences, shifted to the chosen gap. Rates: 95% Clopper-Pearson; gaps: 95% "
    "paired normal interval over clips, Bonferroni over all pairs.")
MAX_CLIPS = 100_000


@dataclass(frozen=True)
class PlanSettings:
    half_width_pts: float = 5.0
    gap_pts: float = 10.0
    share: float = 0.9
    simulations: int = 400
    seed: int = 0
    alpha: float = 0.05
    captions_per_annotator: int = 200
    overlap: float = 0.0


def rejection_matrix(captions: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """(clips x models) final overview rejections, NaN where a model has no caption."""
    models = model_order(captions)
    table = (captions.assign(r=captions["overview_final_verdict"].eq("reject").astype(float))
             .pivot_table(index="clip", columns="model", values="r", aggfunc="first")
             .reindex(columns=models))
    return table.to_numpy(float), models


def _draws(rng: np.random.Generator, pilot: int, n: int, simulations: int) -> np.ndarray:
    """(simulations x n) pilot clip indices: each study draws n clips from a resampled pilot."""
    population = rng.integers(0, pilot, size=(simulations, pilot))
    return np.take_along_axis(population, rng.integers(0, pilot, size=(simulations, n)), axis=1)


def _smallest(reaches: Callable[[int], float], share: float, start: int) -> tuple[int, float]:
    """Smallest n >= start with reaches(n) >= share (doubling, then bisection)."""
    low, high = start - 1, start
    found = reaches(high)
    while found < share:
        low, high = high, high * 2
        if high > MAX_CLIPS:
            return -1, found
        found = reaches(high)
    best = found
    while high - low > 1:
        middle = (low + high) // 2
        value = reaches(middle)
        if value >= share:
            high, best = middle, value
        else:
            low = middle
    return high, best


def plan_rates(matrix: np.ndarray, models: list[str], settings: PlanSettings) -> pd.DataFrame:
    """Per model: clips needed for its rate's interval to be within ± half_width points."""
    rows = []
    pilot = matrix.shape[0]
    for m, model in enumerate(models):
        column = matrix[:, m]
        has = ~np.isnan(column)
        row = {"model": model, "pilot_clips": int(has.sum()),
               "pilot_rate_pct": 100 * float(np.nanmean(column)) if has.any() else math.nan}
        if has.sum() < MIN_CLIPS:
            rows.append({**row, "clips_needed": pd.NA, "reached_share": math.nan,
                         "note": f"not computable: needs at least {MIN_CLIPS} pilot clips"})
            continue

        def reaches(n: int, column: np.ndarray = column) -> float:
            rng = rng_for(settings.seed, f"plan_rate:{n}")
            picked = column[_draws(rng, pilot, n, settings.simulations)]
            k = np.nansum(picked, axis=1)
            total = (~np.isnan(picked)).sum(axis=1)
            low, high = clopper_pearson(k, total, settings.alpha)
            half = 50 * (high - low)
            return float(np.mean(half <= settings.half_width_pts))

        needed, share = _smallest(reaches, settings.share, MIN_CLIPS)
        rows.append({**row, "clips_needed": needed if needed > 0 else pd.NA,
                     "reached_share": share,
                     "note": "" if needed > 0 else f"not computable: more than {MAX_CLIPS} clips"})
    return pd.DataFrame(rows)


def plan_gaps(matrix: np.ndarray, models: list[str], settings: PlanSettings) -> pd.DataFrame:
    """Per pair of models: paired clips needed to separate a true gap of ``gap_pts``."""
    pairs = list(combinations(range(len(models)), 2))
    z = float(stats.norm.ppf(1 - settings.alpha / 2 / max(len(pairs), 1)))
    rows = []
    for a, b in pairs:
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        differences = matrix[both, a] - matrix[both, b]
        row = {"model_a": models[a], "model_b": models[b], "pilot_clips": int(both.sum()),
               "pilot_gap_pts": 100 * float(differences.mean()) if both.any() else math.nan,
               "planned_gap_pts": settings.gap_pts}
        if both.sum() < MIN_CLIPS or np.ptp(differences) == 0:
            rows.append({**row, "clips_needed": pd.NA, "reached_share": math.nan,
                         "note": "not computable: needs at least 2 paired pilot clips on which "
                                 "the two models' verdicts differ"})
            continue
        shifted = differences - differences.mean() + settings.gap_pts / 100

        def reaches(n: int, shifted: np.ndarray = shifted) -> float:
            rng = rng_for(settings.seed, f"plan_gap:{n}")
            pilot = len(shifted)
            # Each resampled pilot is centred on the chosen gap again: the gap is assumed, its
            # clip-to-clip spread is what the pilot tells (with its own uncertainty).
            population = shifted[rng.integers(0, pilot, size=(settings.simulations, pilot))]
            population += settings.gap_pts / 100 - population.mean(axis=1, keepdims=True)
            picked = np.take_along_axis(
                population, rng.integers(0, pilot, size=(settings.simulations, n)), axis=1)
            mean = picked.mean(axis=1)
            spread = picked.std(axis=1, ddof=1)
            half = z * spread / math.sqrt(n)
            # A zero-width interval separates nothing (samples.excludes_zero's rule).
            return float(np.mean((half > 0) & (np.abs(mean) > half) & (np.sign(mean) == np.sign(
                settings.gap_pts))))

        needed, share = _smallest(reaches, settings.share, MIN_CLIPS)
        rows.append({**row, "clips_needed": needed if needed > 0 else pd.NA,
                     "reached_share": share,
                     "note": "" if needed > 0 else f"not computable: more than {MAX_CLIPS} clips"})
    return pd.DataFrame(rows)


def annotators_needed(clips: int, models: int, settings: PlanSettings) -> int:
    """Annotators for ``clips`` x ``models`` captions (see the module docstring)."""
    annotations = math.ceil(clips * models * (1 + settings.overlap))
    return max(models, math.ceil(annotations / settings.captions_per_annotator))


def plan_study(captions: pd.DataFrame, settings: PlanSettings = PlanSettings()
               ) -> pd.DataFrame:
    """One table of the plan: a row per model (rates) and per pair (gaps), then the study's
    size: columns target, model, model_b, pilot_clips, pilot_pct, clips_needed,
    annotators_needed, reached_share, note. The last row ("study") takes the largest need."""
    matrix, models = rejection_matrix(captions)
    rates = plan_rates(matrix, models, settings)
    gaps = plan_gaps(matrix, models, settings) if len(models) >= 2 else pd.DataFrame()
    rows = []
    for row in rates.itertuples():
        rows.append({"target": f"rate within ±{settings.half_width_pts:g} points",
                     "model": row.model, "model_b": "", "pilot_clips": row.pilot_clips,
                     "pilot_pct": row.pilot_rate_pct, "clips_needed": row.clips_needed,
                     "reached_share": row.reached_share, "note": row.note})
    for row in gaps.itertuples():
        rows.append({"target": f"separate a {settings.gap_pts:g}-point gap",
                     "model": row.model_a, "model_b": row.model_b,
                     "pilot_clips": row.pilot_clips, "pilot_pct": row.pilot_gap_pts,
                     "clips_needed": row.clips_needed, "reached_share": row.reached_share,
                     "note": row.note})
    table = pd.DataFrame(rows, columns=["target", "model", "model_b", "pilot_clips", "pilot_pct",
                                        "clips_needed", "annotators_needed", "reached_share",
                                        "note"])
    needs = pd.to_numeric(table["clips_needed"], errors="coerce")
    table["annotators_needed"] = [
        pd.NA if pd.isna(n) else annotators_needed(int(n), len(models), settings) for n in needs]
    if needs.notna().any():
        largest = int(needs.max())
        table.loc[len(table)] = {
            "target": "study (every target)", "model": "", "model_b": "",
            "pilot_clips": int(matrix.shape[0]), "pilot_pct": math.nan, "clips_needed": largest,
            "annotators_needed": annotators_needed(largest, len(models), settings),
            "reached_share": math.nan, "note": ASSUMPTIONS}
    table["clips_needed"] = table["clips_needed"].astype("Int64")
    table["annotators_needed"] = table["annotators_needed"].astype("Int64")
    return table

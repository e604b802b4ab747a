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
How a size is found (:func:`_plan_size`): a search on common random numbers (the same
``simulations`` simulated studies judge every candidate size, a study of ``n + 1`` clips being
that of ``n`` plus a clip), doubling then bisecting; then a verification run of
``verifications`` (4,000) independent simulated studies at the size found. The plan reports
the verified share (``reached_share``) with its Monte-Carlo standard error, and only plans a
size whose verified share meets the target (a size that falls short grows by 2% until it does).
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
    verifications: int = 4_000
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


#: Clips drawn at a time: a study's clips come in blocks, each from its own seeded stream, so
#: that any size's studies can be drawn again without keeping every draw.
_BLOCK = 256


class _Studies:
    """Simulated studies of a growing size from one random stream (common random numbers).

    Each simulation resamples the pilot once (its ``simulations`` x ``pilot`` population) and
    then draws its clips in order: a study of ``n`` clips is the first ``n`` draws, so the
    study of ``n + 1`` clips is that of ``n`` plus one clip. Every candidate size is judged on
    the same simulations, and the share reaching the target moves with ``n``, not with a fresh
    stream's noise.
    """

    def __init__(self, rng: np.random.Generator, pilot: int, simulations: int) -> None:
        self.population = rng.integers(0, pilot, size=(simulations, pilot))
        self._key = int(rng.integers(2**63))
        self._rows = (np.arange(simulations) * pilot)[:, None]
        self._last: tuple[int, np.ndarray] | None = None  # a search asks for one block often

    def block(self, number: int) -> np.ndarray:
        """(simulations x :data:`_BLOCK`) pilot clip indices of draws ``number * _BLOCK`` on."""
        if self._last is not None and self._last[0] == number:
            return self._last[1]
        positions = np.random.default_rng([self._key, number]).integers(
            0, self.population.shape[1], size=(len(self.population), _BLOCK))
        clips: np.ndarray = np.asarray(self.population.ravel()[positions + self._rows])
        self._last = (number, clips)
        return clips


class _Totals:
    """Per simulated study of ``n`` clips: the sum and sum of squares of a pilot value over its
    clips, and how many of them have one (NaN: no caption). Whole blocks are summed once."""

    def __init__(self, studies: _Studies, values: np.ndarray) -> None:
        self._studies = studies
        self._values = np.nan_to_num(values)
        self._present = (~np.isnan(values)).astype(float)
        self._through: list[np.ndarray] = []  # totals through each whole block, (3 x simulations)

    def _sums(self, clips: np.ndarray) -> np.ndarray:
        values = self._values[clips]
        return np.stack([values.sum(axis=1), (values * values).sum(axis=1),
                         self._present[clips].sum(axis=1)])

    def at(self, n: int) -> np.ndarray:
        """(3 x simulations): sum, sum of squares and count over each study's first n clips."""
        whole, rest = divmod(n, _BLOCK)
        while len(self._through) < whole:
            block = self._sums(self._studies.block(len(self._through)))
            self._through.append(block + self._through[-1] if self._through else block)
        totals = self._through[whole - 1] if whole else np.zeros((3, len(self._studies.population)))
        if rest:
            totals = totals + self._sums(self._studies.block(whole)[:, :rest])
        return totals


def _smallest(reaches: Callable[[int], float], share: float, start: int) -> tuple[int, float]:
    """Smallest n >= start with reaches(n) >= share, for a ``reaches`` that grows with n
    (doubling, then bisection); (-1, share at the last size) above :data:`MAX_CLIPS`."""
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


#: How much a size whose verified share falls short grows before it is verified again.
_STEP = 0.02


@dataclass(frozen=True)
class Verified:
    """A planned size and the share of the verification run's studies that reach the target."""

    clips: int
    share: float
    standard_error: float
    simulations: int


def _plan_size(make: Callable[[str, int], Callable[[int], float]], share: float,
               settings: PlanSettings) -> Verified | None:
    """Search a size on common random numbers, then verify it on an independent run.

    ``make(stream, simulations)`` returns the share of that stream's studies of n clips that
    reach the target. The search (``settings.simulations`` studies) is monotone on its common
    random numbers; the verification run (``settings.verifications`` studies of another stream)
    then judges the size found, and the size grows (by :data:`_STEP` of itself) until the
    verified share meets ``share``. None above :data:`MAX_CLIPS` clips.
    """
    found, _ = _smallest(make("search", settings.simulations), share, MIN_CLIPS)
    if found < 0:
        return None
    verify = make("verify", settings.verifications)
    size = found
    reached = verify(size)
    while reached < share:
        size += max(1, math.ceil(size * _STEP))
        if size > MAX_CLIPS:
            return None
        reached = verify(size)
    error = math.sqrt(reached * (1 - reached) / settings.verifications)
    return Verified(size, reached, error, settings.verifications)


def _planned(row: dict[str, object], verified: Verified | None) -> dict[str, object]:
    """A plan row with its verified size, or why there is none."""
    if verified is None:
        return {**row, "clips_needed": pd.NA, "reached_share": math.nan,
                "reached_share_se": math.nan, "verifications": 0,
                "note": f"not computable: more than {MAX_CLIPS} clips"}
    return {**row, "clips_needed": verified.clips, "reached_share": verified.share,
            "reached_share_se": verified.standard_error, "verifications": verified.simulations,
            "note": ""}


def _not_planned(row: dict[str, object], note: str) -> dict[str, object]:
    return {**row, "clips_needed": pd.NA, "reached_share": math.nan,
            "reached_share_se": math.nan, "verifications": 0, "note": note}


def plan_rates(matrix: np.ndarray, models: list[str], settings: PlanSettings) -> pd.DataFrame:
    """Per model: clips needed for its rate's interval to be within ± half_width points in
    ``settings.share`` of simulated studies, verified (see :func:`_plan_size`)."""
    rows = []
    pilot = matrix.shape[0]
    for m, model in enumerate(models):
        column = matrix[:, m]
        has = ~np.isnan(column)
        row = {"model": model, "pilot_clips": int(has.sum()),
               "pilot_rate_pct": 100 * float(np.nanmean(column)) if has.any() else math.nan}
        if has.sum() < MIN_CLIPS:
            rows.append(_not_planned(row, f"not computable: needs at least {MIN_CLIPS} pilot "
                                          "clips"))
            continue

        def make(stream: str, simulations: int, column: np.ndarray = column,
                 model: str = model) -> Callable[[int], float]:
            totals = _Totals(_Studies(rng_for(settings.seed, f"plan_rate:{stream}:{model}"),
                                      pilot, simulations), column)

            def reaches(n: int) -> float:
                k, _, total = totals.at(n)
                low, high = clopper_pearson(k, total, settings.alpha)
                return float(np.mean(50 * (high - low) <= settings.half_width_pts))

            return reaches

        rows.append(_planned(row, _plan_size(make, settings.share, settings)))
    return pd.DataFrame(rows)


def plan_gaps(matrix: np.ndarray, models: list[str], settings: PlanSettings) -> pd.DataFrame:
    """Per pair of models: paired clips needed to separate a true gap of ``gap_pts`` in
    ``settings.share`` of simulated studies, verified (see :func:`_plan_size`)."""
    pairs = list(combinations(range(len(models)), 2))
    z = float(stats.norm.ppf(1 - settings.alpha / 2 / max(len(pairs), 1)))
    gap = settings.gap_pts / 100
    rows = []
    for a, b in pairs:
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        differences = matrix[both, a] - matrix[both, b]
        row = {"model_a": models[a], "model_b": models[b], "pilot_clips": int(both.sum()),
               "pilot_gap_pts": 100 * float(differences.mean()) if both.any() else math.nan,
               "planned_gap_pts": settings.gap_pts}
        if both.sum() < MIN_CLIPS or np.ptp(differences) == 0:
            rows.append(_not_planned(row, "not computable: needs at least 2 paired pilot clips "
                                          "on which the two models' verdicts differ"))
            continue

        def make(stream: str, simulations: int, differences: np.ndarray = differences,
                 pair: str = f"{models[a]}|{models[b]}") -> Callable[[int], float]:
            studies = _Studies(rng_for(settings.seed, f"plan_gap:{stream}:{pair}"),
                               len(differences), simulations)
            totals = _Totals(studies, differences)
            # Each resampled pilot is centred on the chosen gap: the gap is assumed, its
            # clip-to-clip spread is what the pilot tells (with its own uncertainty). Sums are
            # of the pilot's own differences (-1, 0, 1: exact), the centring added after.
            centre = gap - differences[studies.population].mean(axis=1)

            def reaches(n: int) -> float:
                total, squares, _ = totals.at(n)
                mean = total / n + centre
                spread = np.sqrt(np.maximum(squares - total * total / n, 0.0) / (n - 1))
                half = z * spread / math.sqrt(n)
                # A zero-width interval separates nothing (samples.excludes_zero's rule).
                return float(np.mean((half > 0) & (np.abs(mean) > half)
                                     & (np.sign(mean) == np.sign(gap))))

            return reaches

        rows.append(_planned(row, _plan_size(make, settings.share, settings)))
    return pd.DataFrame(rows)


def annotators_needed(clips: int, models: int, settings: PlanSettings) -> int:
    """Annotators for ``clips`` x ``models`` captions (see the module docstring)."""
    annotations = math.ceil(clips * models * (1 + settings.overlap))
    return max(models, math.ceil(annotations / settings.captions_per_annotator))


def plan_study(captions: pd.DataFrame, settings: PlanSettings = PlanSettings()
               ) -> pd.DataFrame:
    """One table of the plan: a row per model (rates) and per pair (gaps), then the study's
    size: columns target, model, model_b, pilot_clips, pilot_pct, clips_needed,
    annotators_needed, reached_share (the verified share at that size), reached_share_se (its
    Monte-Carlo standard error), verifications (the studies of the verification run), note.
    The last row ("study") takes the largest need."""
    matrix, models = rejection_matrix(captions)
    rates = plan_rates(matrix, models, settings)
    gaps = plan_gaps(matrix, models, settings) if len(models) >= 2 else pd.DataFrame()
    rows = []
    for row in rates.itertuples():
        rows.append({"target": f"rate within ±{settings.half_width_pts:g} points",
                     "model": row.model, "model_b": "", "pilot_clips": row.pilot_clips,
                     "pilot_pct": row.pilot_rate_pct, "clips_needed": row.clips_needed,
                     "reached_share": row.reached_share,
                     "reached_share_se": row.reached_share_se,
                     "verifications": row.verifications, "note": row.note})
    for row in gaps.itertuples():
        rows.append({"target": f"separate a {settings.gap_pts:g}-point gap",
                     "model": row.model_a, "model_b": row.model_b,
                     "pilot_clips": row.pilot_clips, "pilot_pct": row.pilot_gap_pts,
                     "clips_needed": row.clips_needed, "reached_share": row.reached_share,
                     "reached_share_se": row.reached_share_se,
                     "verifications": row.verifications, "note": row.note})
    table = pd.DataFrame(rows, columns=["target", "model", "model_b", "pilot_clips", "pilot_pct",
                                        "clips_needed", "annotators_needed", "reached_share",
                                        "reached_share_se", "verifications", "note"])
    needs = pd.to_numeric(table["clips_needed"], errors="coerce")
    table["annotators_needed"] = [
        pd.NA if pd.isna(n) else annotators_needed(int(n), len(models), settings) for n in needs]
    if needs.notna().any():
        largest = int(needs.max())
        table.loc[len(table)] = {
            "target": "study (every target)", "model": "", "model_b": "",
            "pilot_clips": int(matrix.shape[0]), "pilot_pct": math.nan, "clips_needed": largest,
            "annotators_needed": annotators_needed(largest, len(models), settings),
            "reached_share": math.nan, "reached_share_se": math.nan, "verifications": 0,
            "note": ASSUMPTIONS}
    table["clips_needed"] = table["clips_needed"].astype("Int64")
    table["annotators_needed"] = table["annotators_needed"].astype("Int64")
    return table

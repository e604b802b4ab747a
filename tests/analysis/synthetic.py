"""Synthetic studies with known truth, and row builders for hand-written tiny studies.

:func:`synthetic_study` simulates a whole correction study in the tidy schema of
:mod:`scoring.metrics.analysis.tidy`. The data-generating process is additive on the probability scale,
so the truth of every headline quantity is a closed form kept in :class:`Truth`:

- final overview rejected with probability ``base[model] + annotator effect + clip effect``
  (+ ``handheld_interaction[model]`` on handheld clips); annotator effects are evenly spaced and
  sum to zero, clip effects (clip properties + a residual) are centred, so the marginal
  rejection rate of a model is ``base[model]`` (+ its interaction times the handheld share);
- a rejected overview changed ``Geometric(words_tail[model])`` words, so it fails at threshold
  ``t`` with probability ``(1 - g) ** (t - 1)``;
- each mode is tagged on a rejected overview / window independently with a fixed probability;
- windows are rejected with ``window_base[model]`` (+ half the clip effect, centred);
- each changed window field lengthens, shortens or keeps its length (within 5%) with the
  model's shares, rounding-safe;
- the QC pass differs from the annotator's by known amendments;
- scores are Gaussian with known accepted/rejected means, so their AUC is known.
Clips are dropped per model with a small probability, so the paired subset is a strict subset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from scoring.metrics.analysis.tidy import FIELDS, PROPERTIES, UNIT_MODES

MODELS: tuple[str, ...] = ("Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot")
BASE_REJECT: tuple[float, ...] = (0.27, 0.28, 0.29, 0.31, 0.42, 0.45)
WORDS_TAIL: tuple[float, ...] = (0.085, 0.08, 0.075, 0.07, 0.06, 0.11)
WINDOW_REJECT: tuple[float, ...] = (0.08, 0.12, 0.10, 0.11, 0.13, 0.14)
SEGMENTATION_REJECT: tuple[float, ...] = (0.12, 0.14, 0.11, 0.18, 0.18, 0.07)
LENGTHEN: tuple[float, ...] = (0.50, 0.40, 0.39, 0.57, 0.65, 0.50)
SHORTEN: tuple[float, ...] = (0.18, 0.15, 0.16, 0.13, 0.14, 0.19)
OVERVIEW_MODES: dict[str, float] = {"factual": 0.6, "omission": 0.3, "camera": 0.08,
                                    "inference": 0.07, "temporal": 0.02}
WINDOW_MODES: dict[str, float] = {"factual": 0.45, "omission": 0.25, "camera": 0.20,
                                  "inference": 0.08, "temporal": 0.03}

# Clip properties: value -> (probability, effect on overview rejection before centring).
PROPERTY_LEVELS: dict[str, dict[str, tuple[float, float]]] = {
    "content_type": {"domestic_lifestyle": (0.20, 0.05), "urban_vehicle": (0.20, 0.02),
                     "nature_outdoor": (0.20, 0.0), "product_object": (0.18, -0.03),
                     "people_activity": (0.20, -0.04), "unclear": (0.02, 0.0)},
    "camera_platform": {"handheld": (0.30, 0.04), "tripod_static": (0.30, -0.04),
                        "vehicle_mounted": (0.15, 0.03), "drone_aerial": (0.10, 0.0),
                        "gimbal_smooth": (0.10, 0.0), "": (0.05, 0.0)},
    "scene_complexity": {"low": (0.35, -0.03), "medium": (0.40, 0.01), "high": (0.20, 0.03),
                         "unclear": (0.05, 0.0)},
    "shot_scale": {"extreme_wide": (0.1, 0.0), "wide": (0.3, 0.0), "medium": (0.3, 0.0),
                   "close": (0.2, 0.0), "extreme_close": (0.05, 0.0), "unclear": (0.05, 0.0)},
    "motion_intensity": {"low": (0.4, 0.0), "medium": (0.4, 0.0), "high": (0.2, 0.0)},
}
# Scores: name -> ((mean accepted, mean rejected), sd). Equal means carry no information.
SCORES: dict[str, tuple[tuple[float, float], float]] = {
    "score_bleu4": ((0.35, 0.35), 0.08),
    "score_cider": ((1.80, 1.80), 0.30),
    "score_llmfacts_f1": ((0.65, 0.55), 0.10),
    "score_cospar": ((0.80, 0.78), 0.05),
    "score_cossen": ((0.70, 0.70), 0.08),
    "score_hm_cf": ((0.60, 0.58), 0.06),
}


@dataclass(frozen=True)
class Truth:
    """The population values a synthetic study was drawn from."""

    models: tuple[str, ...]
    overview_reject: dict[str, float]
    words_tail: dict[str, float]
    window_reject: dict[str, float]
    segmentation_reject: dict[str, float]
    overview_modes: dict[str, float]
    window_modes: dict[str, float]
    annotator_effects: dict[str, float]
    handheld_penalty: dict[str, float]
    complexity_penalty: dict[str, float]
    lengthen: dict[str, float]
    shorten: dict[str, float]
    score_auc: dict[str, float]
    windows_per_caption: int
    clipped_probabilities: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    def intervention(self, model: str, threshold: int) -> float:
        """Return P(final overview correction changed >= threshold words) for ``model``."""
        if threshold <= 0:
            return 1.0
        return self.overview_reject[model] * (1 - self.words_tail[model]) ** (threshold - 1)

    def window_incidence(self, model: str, mode: str) -> float:
        """Return P(some final window carries ``mode``) without clip effects on windows."""
        p = self.window_reject[model] * self.window_modes[mode]
        return 1 - (1 - p) ** self.windows_per_caption

    def gap(self, model_a: str, model_b: str) -> float:
        """Return the true adjusted gap in intervention rate (a minus b, share)."""
        return self.overview_reject[model_a] - self.overview_reject[model_b]


@dataclass(frozen=True)
class Study:
    """A synthetic study: the tidy tables and the truth they were drawn from."""

    captions: pd.DataFrame
    windows: pd.DataFrame
    truth: Truth


def _by_model(values: Mapping[str, float] | Sequence[float] | None, default: Sequence[float],
              models: Sequence[str]) -> dict[str, float]:
    """Return per-model values from a mapping, a sequence, or the default sequence."""
    if isinstance(values, Mapping):
        return {m: float(values[m]) for m in models}
    source = default if values is None else values
    return {m: float(source[i % len(source)]) for i, m in enumerate(models)}


def _draw_properties(rng: np.random.Generator, n_clips: int
                     ) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, dict[str, float]]]:
    """Return clip property labels, each clip's centred property effect, and centred effects."""
    labels: dict[str, np.ndarray] = {}
    total = np.zeros(n_clips)
    centred: dict[str, dict[str, float]] = {}
    for prop, levels in PROPERTY_LEVELS.items():
        names = list(levels)
        probs = np.array([levels[n][0] for n in names])
        effects = np.array([levels[n][1] for n in names])
        probs = probs / probs.sum()
        mean = float(probs @ effects)
        drawn = rng.choice(len(names), size=n_clips, p=probs)
        labels[prop] = np.array(names, dtype=object)[drawn]
        total += effects[drawn] - mean
        centred[prop] = {n: float(e - mean) for n, e in zip(names, effects, strict=True)}
    return labels, total, centred


def _complexity_contrast(centred: Mapping[str, float]) -> float:
    """Return E[effect | medium or high] - effect(low) for scene complexity."""
    levels = PROPERTY_LEVELS["scene_complexity"]
    weight = levels["medium"][0] + levels["high"][0]
    hard = (levels["medium"][0] * centred["medium"] + levels["high"][0] * centred["high"]) / weight
    return hard - centred["low"]


def synthetic_study(
    *,
    n_clips: int = 196,
    models: Sequence[str] = MODELS,
    overview_reject: Mapping[str, float] | Sequence[float] | None = None,
    words_tail: Mapping[str, float] | Sequence[float] | None = None,
    window_reject: Mapping[str, float] | Sequence[float] | None = None,
    segmentation_reject: Mapping[str, float] | Sequence[float] | None = None,
    handheld_interaction: Mapping[str, float] | None = None,
    windows_per_caption: int = 4,
    other_window_counts: float = 0.2,
    n_annotators: int = 8,
    annotator_effect: float = 0.05,
    confound: float = 0.0,
    clip_effect: float = 0.06,
    property_effects: bool = True,
    window_caption_effect: float = 0.0,
    missing: float = 0.022,
    n_manipulated: int = 12,
    qc_amend: float = 0.05,
    seed: int = 0,
) -> Study:
    """Return a synthetic study with known truth (see the module docstring).

    ``confound`` sends that share of the first model's captions to the harshest annotator
    (the others are assigned uniformly), biasing the raw gap but not the adjusted one.
    ``window_caption_effect`` (sd of a caption-level shift of window rejection) makes windows of
    one caption dependent. ``other_window_counts`` is the share of captions with one window
    more or fewer than ``windows_per_caption``.
    """
    rng = np.random.default_rng(seed)
    models = tuple(models)
    base = _by_model(overview_reject, BASE_REJECT, models)
    tail = _by_model(words_tail, WORDS_TAIL, models)
    window_base = _by_model(window_reject, WINDOW_REJECT, models)
    segmentation = _by_model(segmentation_reject, SEGMENTATION_REJECT, models)
    lengthen = _by_model(None, LENGTHEN, models)
    shorten = _by_model(None, SHORTEN, models)
    interaction = {m: float((handheld_interaction or {}).get(m, 0.0)) for m in models}

    clips = np.array([f"clip{c:04d}" for c in range(n_clips)], dtype=object)
    labels, property_effect, centred = _draw_properties(rng, n_clips)
    if not property_effects:
        property_effect = np.zeros(n_clips)
    clip_total = property_effect + rng.uniform(-clip_effect, clip_effect, n_clips)
    manipulated = np.arange(n_clips) < n_manipulated
    annotators = np.array([f"annotator{a}" for a in range(n_annotators)], dtype=object)
    annotator_shift = (np.linspace(annotator_effect, -annotator_effect, n_annotators)
                       if n_annotators > 1 else np.zeros(1))

    # One row per (clip, model) before dropping the missing ones.
    clip_of = np.repeat(np.arange(n_clips), len(models))
    model_of = np.tile(np.arange(len(models)), n_clips)
    n = len(clip_of)
    who = rng.integers(0, n_annotators, n)
    if confound > 0:
        harsh = (model_of == 0) & (rng.random(n) < confound)
        who = np.where(harsh, 0, who)
    model_names = np.array(models, dtype=object)[model_of]
    handheld = labels["camera_platform"][clip_of] == "handheld"
    model_base = np.array([base[m] for m in models])[model_of]
    model_interaction = np.array([interaction[m] for m in models])[model_of]
    p_reject = (model_base + annotator_shift[who] + clip_total[clip_of]
                + handheld * model_interaction)
    clipped = int(((p_reject < 0) | (p_reject > 1)).sum())
    rejected = rng.random(n) < np.clip(p_reject, 0, 1)

    captions = _caption_frame(rng, clips[clip_of], model_names, annotators[who], rejected,
                              np.array([tail[m] for m in models])[model_of],
                              np.array([segmentation[m] for m in models])[model_of],
                              {p: labels[p][clip_of] for p in PROPERTIES}, manipulated[clip_of],
                              model_of, qc_amend)
    windows = _window_frame(rng, captions, clip_total[clip_of], model_of,
                            np.array([window_base[m] for m in models]),
                            np.array([lengthen[m] for m in models]),
                            np.array([shorten[m] for m in models]),
                            windows_per_caption, other_window_counts, window_caption_effect,
                            qc_amend)
    captions = _with_exposure(np.random.default_rng([seed, 1]), captions)
    keep = rng.random(n) >= missing
    captions = captions[keep].reset_index(drop=True)
    windows = windows[windows["_row"].isin(np.nonzero(keep)[0])].drop(columns="_row")
    windows = windows.reset_index(drop=True)

    handheld_share = PROPERTY_LEVELS["camera_platform"]["handheld"][0]
    truth = Truth(
        models=models,
        overview_reject={m: base[m] + interaction[m] * handheld_share for m in models},
        words_tail=tail, window_reject=window_base, segmentation_reject=segmentation,
        overview_modes=dict(OVERVIEW_MODES), window_modes=dict(WINDOW_MODES),
        annotator_effects=dict(zip(annotators, annotator_shift.tolist(), strict=True)),
        handheld_penalty={m: (centred["camera_platform"]["handheld"]
                              - centred["camera_platform"]["tripod_static"])
                          * property_effects + interaction[m] for m in models},
        complexity_penalty={m: _complexity_contrast(centred["scene_complexity"])
                            * property_effects for m in models},
        lengthen=lengthen, shorten=shorten,
        score_auc={name: float(stats.norm.cdf((means[0] - means[1]) / (sd * np.sqrt(2))))
                   for name, (means, sd) in SCORES.items()} | {"score_length": 0.5},
        windows_per_caption=windows_per_caption,
        clipped_probabilities=clipped,
    )
    return Study(captions, windows, truth)


def _with_exposure(rng: np.random.Generator, captions: pd.DataFrame) -> pd.DataFrame:
    """Return ``captions`` with each annotator's queue in a random order: ``queue_position`` and
    ``exposure`` (the rank of the caption among its annotator's captions of the same clip).

    Drawn from their own generator so that adding them changed no other synthetic number.
    """
    order = pd.Series(rng.random(len(captions)), index=captions.index)
    queue = order.groupby(captions["annotator"]).rank(method="first").astype(int)
    exposure = queue.groupby([captions["annotator"], captions["clip"]]).rank(method="first")
    return captions.assign(queue_position=queue, exposure=exposure.astype(int))


def _modes(rng: np.random.Generator, rejected: np.ndarray, probabilities: Mapping[str, float]
           ) -> dict[str, np.ndarray]:
    """Return independent mode tags for rejected units (accepted units carry none)."""
    return {m: rejected & (rng.random(len(rejected)) < probabilities[m]) for m in UNIT_MODES}


def _annotator_pass(rng: np.random.Generator, final_rejected: np.ndarray, amend: float
                    ) -> np.ndarray:
    """Return the annotator's verdicts: QC added some rejections and overturned fewer."""
    draw = rng.random(len(final_rejected))
    added = final_rejected & (draw < amend)
    overturned = ~final_rejected & (draw < amend / 2)
    return (final_rejected & ~added) | overturned


def _caption_frame(rng: np.random.Generator, clips: np.ndarray, models: np.ndarray,
                   annotators: np.ndarray, rejected: np.ndarray, tail: np.ndarray,
                   segmentation: np.ndarray, labels: Mapping[str, np.ndarray],
                   manipulated: np.ndarray, model_of: np.ndarray, amend: float) -> pd.DataFrame:
    """Return the captions table for the drawn final overview verdicts."""
    n = len(clips)
    frame: dict[str, Any] = {"clip": clips, "model": models, "annotator": annotators,
                             "reviewer": np.array([f"reviewer{r}" for r in rng.integers(0, 3, n)],
                                                  dtype=object)}
    final_modes = _modes(rng, rejected, OVERVIEW_MODES)
    annotator_rejected = _annotator_pass(rng, rejected, amend)
    frame["overview_annotator_verdict"] = np.where(annotator_rejected, "reject", "accept")
    for mode in UNIT_MODES:
        # The annotator tagged what the final pass carries; an overturned rejection was factual.
        agreed = final_modes[mode] & annotator_rejected
        frame[f"overview_annotator_{mode}"] = agreed | (
            (mode == "factual") & annotator_rejected & ~rejected)
    frame["overview_final_verdict"] = np.where(rejected, "reject", "accept")
    for mode in UNIT_MODES:
        frame[f"overview_final_{mode}"] = final_modes[mode]
    original_words = rng.integers(60, 111, n)
    words = np.where(rejected, rng.geometric(tail), 0)
    original_chars = original_words * 6 + rng.integers(0, 6, n)
    frame["overview_words_changed"] = words
    frame["overview_char_similarity"] = np.where(
        rejected, np.clip(1 - words / original_words * rng.uniform(0.5, 1.0, n), 0.05, 0.99), 1.0)
    frame["overview_original_chars"] = original_chars
    frame["overview_corrected_chars"] = np.maximum(
        original_chars + np.where(rejected, (words * 6 * rng.uniform(-0.5, 1.0, n)).round(), 0),
        0).astype(int)
    seg_final = rng.random(n) < segmentation
    frame["segmentation_annotator_verdict"] = np.where(_annotator_pass(rng, seg_final, amend),
                                                       "reject", "accept")
    frame["segmentation_final_verdict"] = np.where(seg_final, "reject", "accept")
    for prop in PROPERTIES:
        frame[prop] = labels[prop]
    frame["manipulated"] = manipulated
    speed = np.array([739, 283, 2596, 754, 211, 775], dtype=float)[model_of % 6]
    frame["input_tokens_per_second"] = speed * rng.lognormal(0, 0.1, n)
    for flag, share in (("retried", 0.1), ("re_encoded", 0.05), ("invalid_kept", 0.01)):
        frame[flag] = rng.random(n) < share * (model_of % 2)
    accepted = ~rejected
    for name, ((mean_accepted, mean_rejected), sd) in SCORES.items():
        frame[name] = np.where(accepted, mean_accepted, mean_rejected) + rng.normal(0, sd, n)
    frame["score_hm_cf"] = np.where(rng.random(n) < 0.05, np.nan, frame["score_hm_cf"])
    frame["score_length"] = original_words.astype(float)
    frame["identifier"] = np.array([f"vendor/{m.lower()}" for m in models], dtype=object)
    frame["route"] = "OpenRouter"
    frame["provider"] = np.array([f"provider{p}" for p in rng.integers(0, 1 + model_of % 3)],
                                 dtype=object)
    return pd.DataFrame(frame)


def _window_frame(rng: np.random.Generator, captions: pd.DataFrame, clip_effect: np.ndarray,
                  model_of: np.ndarray, window_base: np.ndarray, lengthen: np.ndarray,
                  shorten: np.ndarray, size: int, other_counts: float, caption_effect: float,
                  amend: float) -> pd.DataFrame:
    """Return the windows table of every caption row (``_row`` = the caption's row)."""
    n = len(captions)
    counts = np.full(n, size)
    other = rng.random(n) < other_counts
    counts[other] += np.where(rng.random(other.sum()) < 0.5, -1, 1)
    counts = np.maximum(counts, 1)
    row = np.repeat(np.arange(n), counts)
    index = np.arange(len(row)) - np.repeat(np.cumsum(counts) - counts, counts)
    shift = rng.normal(0, caption_effect, n) if caption_effect > 0 else np.zeros(n)
    p = window_base[model_of[row]] + 0.5 * clip_effect[row] + shift[row]
    rejected = rng.random(len(row)) < np.clip(p, 0, 1)
    frame: dict[str, Any] = {"_row": row, "clip": captions["clip"].to_numpy()[row],
                             "model": captions["model"].to_numpy()[row], "index": index}
    final_modes = _modes(rng, rejected, WINDOW_MODES)
    annotator_rejected = _annotator_pass(rng, rejected, amend)
    frame["annotator_verdict"] = np.where(annotator_rejected, "reject", "accept")
    frame["final_verdict"] = np.where(rejected, "reject", "accept")
    for mode in UNIT_MODES:
        frame[f"annotator_{mode}"] = (final_modes[mode] & annotator_rejected) | (
            (mode == "factual") & annotator_rejected & ~rejected)
        frame[f"final_{mode}"] = final_modes[mode]
    near_total = rejected & (rng.random(len(row)) < np.where(final_modes["camera"], 0.3, 0.08))
    changes = _field_changes(rng, rejected, near_total)
    for field_name, changed in zip(FIELDS, changes, strict=True):
        frame |= _field_columns(rng, field_name, changed, near_total,
                                lengthen[model_of[row]], shorten[model_of[row]])
    return pd.DataFrame(frame)


def _field_changes(rng: np.random.Generator, rejected: np.ndarray, near_total: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Return which fields a rejected window changed (at least one; both when near-total)."""
    scene = rejected & ((rng.random(len(rejected)) < 0.85) | near_total)
    shot = rejected & ((rng.random(len(rejected)) < 0.35) | near_total)
    scene |= rejected & ~shot & ~scene
    return scene, shot


def _field_columns(rng: np.random.Generator, name: str, changed: np.ndarray,
                   near_total: np.ndarray, lengthen: np.ndarray, shorten: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """Return the text-measure columns of one field."""
    n = len(changed)
    low, high = (12, 41) if name == "scene" else (5, 15)
    words = rng.integers(low, high, n)
    chars = words * 6 + rng.integers(0, 6, n)
    draw = rng.random(n)
    # Factors keep clear of the 5% band edges even after rounding to whole characters.
    factor = np.where(draw < lengthen, 1 + rng.uniform(0.08, 0.8, n),
                      np.where(draw < lengthen + shorten, 1 - rng.uniform(0.08, 0.5, n),
                               1 + rng.uniform(-0.03, 0.03, n)))
    similarity = np.where(near_total, rng.uniform(0.1, 0.5, n), rng.uniform(0.6, 0.97, n))
    corrected_chars = np.where(changed, np.round(chars * factor), chars).astype(int)
    corrected_words = np.where(changed, np.maximum(1, np.round(words * factor)), words).astype(int)
    words_changed = np.maximum(1, np.round(np.maximum(words, corrected_words) * (1 - similarity)))
    return {
        f"{name}_original_chars": chars,
        f"{name}_corrected_chars": corrected_chars,
        f"{name}_original_words": words,
        f"{name}_corrected_words": corrected_words,
        f"{name}_words_changed": np.where(changed, words_changed, 0).astype(int),
        f"{name}_char_similarity": np.where(changed, similarity, 1.0),
        f"{name}_changed": changed,
    }


# --- Hand-written tiny studies -----------------------------------------------------------------

_PROPERTY_DEFAULTS = {"content_type": "people_activity", "camera_platform": "tripod_static",
                      "scene_complexity": "low", "shot_scale": "wide", "motion_intensity": "low"}


def caption_row(
    clip: str,
    model: str,
    *,
    overview: str = "accept",
    modes: Iterable[str] = (),
    annotator_overview: str | None = None,
    annotator_modes: Iterable[str] | None = None,
    words_changed: int | None = None,
    similarity: float | None = None,
    chars: tuple[int, int] = (500, 500),
    segmentation: str = "accept",
    annotator_segmentation: str | None = None,
    annotator: str = "ann1",
    reviewer: str = "rev1",
    manipulated: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """Return one valid captions row; unspecified fields take plain defaults.

    The annotator pass defaults to the final one. A rejected overview defaults to 5 words
    changed at similarity 0.9. ``extra`` sets any other column (properties, scores, metadata).
    """
    modes = tuple(modes)
    annotator_overview = annotator_overview or overview
    annotator_modes = modes if annotator_modes is None else tuple(annotator_modes)
    rejected = overview == "reject"
    row: dict[str, Any] = {"clip": clip, "model": model, "annotator": annotator,
                           "reviewer": reviewer,
                           "overview_annotator_verdict": annotator_overview,
                           "overview_final_verdict": overview}
    for mode in UNIT_MODES:
        row[f"overview_annotator_{mode}"] = mode in annotator_modes
        row[f"overview_final_{mode}"] = mode in modes
    if words_changed is None:
        words_changed = 5 if rejected else 0
    if similarity is None:
        similarity = 0.9 if rejected else 1.0
    row["overview_words_changed"] = words_changed
    row["overview_char_similarity"] = similarity
    row["overview_original_chars"], row["overview_corrected_chars"] = chars
    row["segmentation_annotator_verdict"] = annotator_segmentation or segmentation
    row["segmentation_final_verdict"] = segmentation
    row |= _PROPERTY_DEFAULTS
    row |= {"manipulated": manipulated, "input_tokens_per_second": 500.0, "retried": False,
            "re_encoded": False, "invalid_kept": False}
    row |= extra
    return row


def window_row(
    clip: str,
    model: str,
    index: int,
    *,
    verdict: str = "accept",
    modes: Iterable[str] = (),
    annotator_verdict: str | None = None,
    annotator_modes: Iterable[str] | None = None,
    scene: tuple[int, int, float] | None = None,
    shot: tuple[int, int, float] | None = None,
) -> dict[str, Any]:
    """Return one valid windows row.

    ``scene`` / ``shot`` are (original chars, corrected chars, similarity) of a changed field;
    a field left as None is unchanged (100 / 40 chars). A rejected window with neither given
    changes its scene from 100 to 110 chars at similarity 0.8.
    """
    modes = tuple(modes)
    annotator_verdict = annotator_verdict or verdict
    annotator_modes = modes if annotator_modes is None else tuple(annotator_modes)
    if verdict == "reject" and scene is None and shot is None:
        scene = (100, 110, 0.8)
    row: dict[str, Any] = {"clip": clip, "model": model, "index": index,
                           "annotator_verdict": annotator_verdict, "final_verdict": verdict}
    for mode in UNIT_MODES:
        row[f"annotator_{mode}"] = mode in annotator_modes
        row[f"final_{mode}"] = mode in modes
    for name, change, default in (("scene", scene, 100), ("shot", shot, 40)):
        original, corrected, similarity = change or (default, default, 1.0)
        row |= {f"{name}_original_chars": original, f"{name}_corrected_chars": corrected,
                f"{name}_original_words": original // 6, f"{name}_corrected_words": corrected // 6,
                f"{name}_words_changed": 0 if change is None else max(1, original // 20),
                f"{name}_char_similarity": similarity, f"{name}_changed": change is not None}
    return row


def tidy_frames(caption_rows: Sequence[Mapping[str, Any]], window_rows: Sequence[Mapping[str, Any]]
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the captions and windows DataFrames of hand-written rows."""
    captions = pd.DataFrame(list(caption_rows))
    windows = pd.DataFrame(list(window_rows))
    if windows.empty:
        windows = pd.DataFrame([window_row("x", "x", 0)]).iloc[:0]
    return captions, windows

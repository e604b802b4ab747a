"""The failure profile: every table of PROTOCOL.md section 5 from the tidy tables, in one call."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from scoring.metrics.analysis.exposure import exposure_groups, rejection_by_exposure
from scoring.metrics.analysis.gaps import GAP_COLUMNS, pairwise_gaps
from scoring.metrics.analysis.generation import generation_details
from scoring.metrics.analysis.leaderboard import leaderboard
from scoring.metrics.analysis.metrics import LOWER_ACCEPTS, metric_auc
from scoring.metrics.analysis.modes import (
    mode_incidence,
    mode_incidence_by_model,
    mode_incidence_variants,
    mode_severity,
    omission_vs_factual,
)
from scoring.metrics.analysis.planner import PlanSettings, plan_study
from scoring.metrics.analysis.properties import (
    MIN_VERDICTS,
    clip_property_buckets,
    clip_property_tests,
    difficulty_penalty,
)
from scoring.metrics.analysis.rates import (
    accepted_with_rejected_window,
    correctness,
    intervention_rate,
    models_failing_per_clip,
    untouched,
    windows_rejected_per_caption,
)
from scoring.metrics.analysis.repairs import model_profile, repair_direction
from scoring.metrics.analysis.samples import MIN_CLIPS
from scoring.metrics.analysis.tidy import model_order, paired_subset, validate_tidy
from scoring.metrics.edits import NEAR_TOTAL_CUT, WORD_THRESHOLDS

Progress = Callable[[str], None]
#: Key of ``DataFrame.attrs`` saying why a table could not be computed.
NOT_COMPUTABLE = "not_computable"

#: Table name -> what each number means. The keys are the names :func:`failure_profile`
#: returns, in this order; exports name their files after them.
TABLE_CAPTIONS: dict[str, str] = {
    "metric_auc": (
        "Table 1. AUC of each automatic score of the model's overview for separating accepted "
        "from rejected final overviews, over all captions with a final verdict (0.5 = no "
        "information; oriented in advance, so < 0.5 points the wrong way); n = accepted / "
        "rejected captions with that score, means per verdict, 95% percentile bootstrap "
        "interval over clips. Reference sets: approved = the approved final overviews of the "
        "clip's other captions; gold = the reviewer corrections of the clip's other captions "
        "(a caption is never scored against its own final text); imported = the clip's "
        "imported references; control = no reference (overview length in words, shorter -> "
        "accept). Matched: accepted and rejected candidates of the same clip scored against an "
        "identical reference set (approved and gold: the clip's other captions leaving both "
        "out), share of pairs the accepted one wins, ties half, with its own clip-bootstrap "
        "interval; empty when not computable. CIDEr-D: pycocoevalcap's arithmetic with idf "
        "over the study's captions (one document per clip holding every model's overview), a "
        "choice: the COCO toolkit would take the idf from each run's references."),
    "intervention_rate": (
        "Table 2 / Figure 1. Overview intervention rate (%) per model at increasing evidence "
        "thresholds: a caption fails at t when its final correction changed at least t words "
        "(word-level diff, replacements counted at the longer side). All captions."),
    "intervention_rate_paired": (
        "Table 16. Table 2 on the paired subset (clips with a final verdict from every model)."),
    "mode_incidence": (
        "Table 3 / Figure 2. Share of captions (%) carrying each mode by detector: overview "
        "pass (tagged on the rejected QC-pass overview) vs window pass (tagged on any rejected "
        "annotator-pass window of the caption); ratio = window / overview. k = captions."),
    "mode_incidence_variants": (
        "Table 4. Table 3 under the robustness variants: annotator pass at both levels, QC pass "
        "at both levels, camera-over-factual precedence enforced on every unit, paired subset, "
        "manipulated control clips excluded."),
    "mode_severity": (
        "Table 6. Each mode pooled across models, window detector (annotator-pass windows): "
        "share of captions carrying it. Severity unit: the window repair of Table 9, a changed "
        "scene or shot field of a finally rejected window, carrying the modes of its window. "
        "Near-total: share of the mode's repairs whose field's character similarity (2*LCS / "
        "(|a|+|b|) of final against original text, that field alone) is below the near-total "
        "cut; a shot rewritten entirely is near-total even if the scene was untouched. Per "
        "100: captions per hundred with at least one near-total repair carrying the mode. The "
        "'all repairs' row counts every repair, the same repairs as Table 9. Segmentation is "
        "caption-level and has no window severity. Floors: modes are recorded on rejected "
        "units only."),
    "mode_incidence_by_model": (
        "Table 7 / Figure 7. Share of each model's captions (%) carrying each mode at least "
        "once, window detector, all captions, with 95% Clopper-Pearson intervals. Modes are "
        "not exclusive."),
    "mode_incidence_by_model_paired": "Table 17. Table 7 on the paired subset.",
    "correctness": (
        "Table 5 / Figure 5. Paired subset. Correct overview: final overview accepted as "
        "written (%, Clopper-Pearson 95%). Correct window: share of windows accepted (%, 95% "
        "bootstrap over clips). Critical: share of captions with at least one near-total window "
        "repair, i.e. a changed scene or shot field of a finally rejected window whose "
        "character similarity to the original (that field alone) is below the near-total cut, "
        "the unit and rule of Table 6 (%, Clopper-Pearson); derived from edit size, not "
        "recorded by reviewers."),
    "correctness_all": "Table 5 on all captions.",
    "accepted_with_rejected_window": (
        "Figure 3. Share of overviews the annotator accepted whole that contain at least one "
        "window the same annotator rejected (%, Clopper-Pearson 95%); pooled_pct is the rate "
        "over all models."),
    "windows_rejected_per_caption": (
        "Figure 4. Rejected windows per caption (final pass) among captions with exactly K "
        "windows, against independent windows: expected counts are the sum over models of "
        "n_m x Binomial(K, p_m), where p_m is the model's own final-pass window rejection rate "
        "on those same captions (not the pooled rate), so observed and expected share a "
        "mean."),
    "models_failing_per_clip": (
        "Figure 8. Number of models whose final overview was rejected on each paired clip, "
        "against a binomial at the pooled rate (expected counts)."),
    "omission_vs_factual": (
        "Figure 10. Omission rate against factual-error rate per model (%, window detector, "
        "all captions), with Pearson r across models."),
    "untouched": (
        "Table 8. Share of each component left untouched (%): overview and segmentation per "
        "caption, scene and shot text per window. Rewritten: share of all characters of "
        "overview and timeline text changed (characters outside the alignment, both sides), "
        "accepted text counting as unchanged."),
    "difficulty_penalty": (
        "Table 13 / Figure 9. Intervention rate (%) on difficult vs easier footage per model: "
        "handheld vs tripod-static, medium/high vs low scene complexity; penalty in points with "
        "a 95% percentile bootstrap interval over clips."),
    "repair_direction": (
        "Table 9. Direction of window repairs (changed scene or shot fields of rejected "
        "windows): lengthened / shortened / same length within +-0, 5 and 10% bands (%), "
        "median length change (%), profile (additive >= 55% lengthened at +-5%, substitutive "
        "< 45%, mixed otherwise) and the handheld penalty from Table 13."),
    "model_profile": (
        "Table 10. Model profiles: correct-overview rate on the paired subset, the two most "
        "frequent modes (window detector, all captions), handheld penalty (points), repairs "
        "lengthened / shortened / same at +-5% and the direction profile."),
    "clip_property_tests": (
        "Table 11. Correct-overview rate pooled across models by clip property (buckets with "
        "fewer than the minimum verdicts and 'unclear' labels omitted): range across buckets; "
        "caption-level Pearson chi-square of bucket x correct without continuity correction "
        "(treats captions as independent, overstates the evidence); clip-level Kruskal-Wallis "
        "on per-clip correct shares, Bonferroni-corrected by multiplying by the number of "
        "properties tested (those with at least two eligible buckets; the "
        "bonferroni_comparisons column)."),
    "clip_property_buckets": (
        "Table 12. Correct-overview rate (%) by bucket, pooled across models: verdicts, clips, "
        "captions per model (range) and model spread (best minus worst model, points)."),
    "pairwise_gaps": (
        "Table 15. Pairwise gaps in overview intervention rate (model_a minus model_b, points) "
        "on the paired subset. Raw: paired bootstrap over clips. Adjusted: additive model with "
        "annotator and clip effects refitted in each clip-bootstrap resample. Intervals "
        "Bonferroni-corrected over all pairs; 'separates' = the interval excludes zero by a clear "
        "margin (never on a zero-width interval, nor on a bound within 1e-7 points of 0); an "
        "adjusted gap the additive model cannot identify (models and annotators coincide) is "
        "blank, adjusted_note saying so. Needs 2 paired clips."),
    "leaderboard": (
        "Leaderboard of the judge ensemble (CLIP-CC-Bench's Borda): each embedding judge ranks "
        "the models by their mean per-clip score (by default HM-CF of the model's overview "
        "against its final corrected overview; the export's parameters name the score and "
        "references); a model gets V - rank points from each judge (the top one V - 1, equal "
        "means share the better rank); the final rank is by total points, ties broken by the "
        "mean across judges, then by model name. Clips (column averaged_over): by default each "
        "model's mean under a judge is over its own scored clips, as the paper and "
        "CLIP-CC-Bench average ('own clips'; clips = that model's count); the common-clips "
        "variant (export option --leaderboard-clips common) counts only clips scored for every "
        "model under every judge ('common clips'). Stability: share of clip-bootstrap resamples "
        "in which the model keeps its rank, and the central 95% of its ranks (at most 2,000 "
        "resamples); blank for a model scored on fewer than 2 clips, stability_note saying so."),
    "judge_agreement": (
        "Inter-judge agreement on the leaderboard's per-judge means: Kendall's tau-b for each "
        "pair of judges (1 = same order, -1 = reversed) and Kendall's W across all judges "
        "(1 = full concordance, 0 = none; tie-corrected)."),
    "generation": (
        "Table 14. Generation details per model over all generated captions (every clip sent, "
        "whether or not it has a final verdict): identifier, route, distinct serving "
        "providers, median input tokens per second of video, captions retried, re-encoded, "
        "and kept although invalid."),
    "rejection_by_exposure": (
        "Study validity: rejection rate by exposure. For each model and for all models pooled, "
        "the final overview rejection rate (%, Clopper-Pearson 95%) and the final window "
        "rejection rate (%, 95% percentile bootstrap over clips) of captions that were the first "
        "caption of their clip the annotator met (first: exposure 1) against those met after "
        "another caption of the same clip (later: exposure 2 or more); n = captions / windows. "
        "Difference = later minus first (points) with a 95% percentile bootstrap interval over "
        "clips, only where each group has at least 5 captions on at least 2 clips (else "
        "difference_note says what it needs). How to read it: an annotator who has corrected "
        "one model's caption of a clip "
        "knows what to look for in the next one, so a difference whose interval excludes 0 "
        "says the study was anchored; a study that was not anchored shows no difference (an "
        "interval around 0). A one-model-per-clip study has no later exposures and is not "
        "anchored by design. Captions without an exposure (assigned before assignment designs "
        "existed) are left out; exposure is that of the annotation whose verdict is final."),
    "study_plan": (
        "Study planner: from this study's final overview verdicts as a pilot, the clips (and "
        "annotators, at most 200 captions each, one model per clip) a study needs so that in "
        "90% of studies simulated by resampling the pilot every model's rejection rate has a "
        "95% Clopper-Pearson interval within +-5 points, and each pair of models with a true "
        "gap of 10 points is separated (paired interval over clips, Bonferroni over all pairs); "
        "every size is judged on the same simulated studies, and the size found is verified on "
        "4,000 independent ones: reached_share = the verified share at the planned size (never "
        "below the target), reached_share_se its Monte-Carlo standard error; the last row takes "
        "the largest need "
        "and states the assumptions (manage.py plan_study sets other targets)."),
}


def failure_profile(
    captions: pd.DataFrame,
    windows: pd.DataFrame,
    *,
    resamples: int = 20_000,
    adjusted_resamples: int = 4_000,
    seed: int = 0,
    paired_only: bool = False,
    progress: Progress | None = None,
    near_total_cut: float = NEAR_TOTAL_CUT,
    thresholds: tuple[int, ...] = WORD_THRESHOLDS,
    min_verdicts: int = MIN_VERDICTS,
    windows_per_caption: int = 4,
    matched: pd.DataFrame | None = None,
    generated: pd.DataFrame | None = None,
    judged: pd.DataFrame | None = None,
    leaderboard_clips: str = "own",
    lower_accepts: Sequence[str] = (),
    lower_better_judges: Sequence[str] = (),
) -> dict[str, pd.DataFrame]:
    """Return every table of the failure profile, keyed and ordered as :data:`TABLE_CAPTIONS`.

    Validates the inputs first (:func:`~scoring.metrics.analysis.tidy.validate_tidy`). With
    ``paired_only`` every table is computed on the paired subset. ``resamples`` is used by every
    clip bootstrap except the adjusted pairwise model, which uses ``adjusted_resamples``. The
    same inputs and seed give identical numbers. ``progress``, when given, is called with each
    table's name just before it is computed. A table the study cannot support comes back
    without rows and marked (:func:`not_computable` says what it needs: at least 2 models,
    paired clips, windows, both verdicts...), never as an error; without any caption every
    table is marked. ``matched`` holds the leave-both-out pair
    scores of Table 1's Matched column (:mod:`scoring.metrics.analysis.metrics`); ``generated`` holds
    every generated caption for Table 14 (columns: model and the generation columns of the
    captions table; default: ``captions``, i.e. only captions with a final verdict); ``judged``
    the per-clip judge scores of the leaderboard (:mod:`scoring.metrics.analysis.leaderboard`),
    averaged over each model's own clips or, with ``leaderboard_clips="common"``, the common ones. Models
    appear in
    the same order in every per-model table (highest paired correct-overview rate first),
    except tables the paper sorts by their own column (repair_direction, difficulty_penalty).
    """
    validate_tidy(captions, windows)
    if captions.empty:
        return _with_generation(empty_profile(), generated)
    if paired_only:
        captions, paired_windows = paired_subset(captions, windows)
        assert paired_windows is not None
        windows = paired_windows
        if captions.empty:
            return _with_generation(empty_profile(NO_PAIRED), generated)
    captions = captions.reset_index(drop=True)
    windows = windows.reset_index(drop=True)
    models = model_order(captions)
    paired, paired_windows = paired_subset(captions, windows)
    assert paired_windows is not None
    boot: dict[str, Any] = {"resamples": resamples, "seed": seed, "models": models}
    out: dict[str, pd.DataFrame] = {}

    steps: dict[str, Callable[[], pd.DataFrame]] = {
        "metric_auc": lambda: metric_auc(captions, matched=matched, resamples=resamples,
                                         lower_accepts=(*LOWER_ACCEPTS, *lower_accepts),
                                         seed=seed),
        "intervention_rate": lambda: intervention_rate(captions, thresholds=thresholds,
                                                       models=models),
        "intervention_rate_paired": lambda: intervention_rate(paired, thresholds=thresholds,
                                                              models=models),
        "mode_incidence": lambda: mode_incidence(captions, windows),
        "mode_incidence_variants": lambda: mode_incidence_variants(captions, windows),
        "mode_severity": lambda: mode_severity(captions, windows, near_total_cut=near_total_cut),
        "mode_incidence_by_model": lambda: mode_incidence_by_model(captions, windows,
                                                                   models=models),
        "mode_incidence_by_model_paired": lambda: mode_incidence_by_model(
            paired, paired_windows, models=models),
        "correctness": lambda: correctness(paired, paired_windows, near_total_cut=near_total_cut,
                                           **boot),
        "correctness_all": lambda: correctness(captions, windows, near_total_cut=near_total_cut,
                                               **boot),
        "accepted_with_rejected_window": lambda: accepted_with_rejected_window(
            captions, windows, models=models),
        "windows_rejected_per_caption": lambda: windows_rejected_per_caption(
            captions, windows, windows_per_caption=windows_per_caption, models=models),
        "models_failing_per_clip": lambda: models_failing_per_clip(captions),
        "omission_vs_factual": lambda: omission_vs_factual(out["mode_incidence_by_model"]),
        "untouched": lambda: untouched(captions, windows, models=models),
        "difficulty_penalty": lambda: difficulty_penalty(captions, **boot),
        "repair_direction": lambda: _with_handheld_penalty(
            repair_direction(captions, windows, models=models), out["difficulty_penalty"]),
        "model_profile": lambda: model_profile(out["correctness"], out["mode_incidence_by_model"],
                                               out["difficulty_penalty"], out["repair_direction"]),
        "clip_property_tests": lambda: clip_property_tests(captions, min_verdicts=min_verdicts),
        "clip_property_buckets": lambda: clip_property_buckets(captions, min_verdicts=min_verdicts,
                                                               models=models),
        "pairwise_gaps": lambda: pairwise_gaps(captions, resamples=resamples,
                                               adjusted_resamples=adjusted_resamples, seed=seed,
                                               models=models),
        "leaderboard": lambda: _leaderboard(judged, resamples, seed, out, leaderboard_clips,
                                            lower_better_judges),
        "judge_agreement": lambda: out.pop("_agreement"),
        "generation": lambda: _generation(captions, generated, models),
        "rejection_by_exposure": lambda: rejection_by_exposure(captions, windows, **boot),
        "study_plan": lambda: plan_study(captions, PlanSettings(seed=seed)),
    }
    assert list(steps) == list(TABLE_CAPTIONS), "every table needs a caption, in order"
    needs = _needs(captions, windows, paired, windows_per_caption)
    for name, compute in steps.items():
        if progress is not None:
            progress(name)
        if name in needs and name in NEEDED_TO_RUN:
            out[name] = pd.DataFrame(columns=list(GAP_COLUMNS))
        else:
            out[name] = compute()
    needs |= _needs_after(out, min_verdicts)
    if out["leaderboard"].empty or len(out["leaderboard"]) < 2:
        needs["leaderboard"] = needs["judge_agreement"] = (
            "needs stored per-clip judge scores (a study scoring job with embedding metrics) for "
            "at least 2 models on the same clips")
    for name, reason in needs.items():
        out[name] = mark_not_computable(out[name], reason)
    return out


#: Tables that cannot even be computed without what they need (others give a row of blanks);
#: their columns come from GAP_COLUMNS, so the CSV still has its header.
NEEDED_TO_RUN = frozenset({"pairwise_gaps"})
#: Tables that read the windows table.
WINDOW_TABLES = ("mode_incidence", "mode_incidence_variants", "mode_severity",
                 "mode_incidence_by_model", "mode_incidence_by_model_paired",
                 "accepted_with_rejected_window", "windows_rejected_per_caption",
                 "omission_vs_factual", "repair_direction")
PAIRED_TABLES = ("intervention_rate_paired", "mode_incidence_by_model_paired", "correctness",
                 "models_failing_per_clip", "pairwise_gaps")
NO_VERDICTS = "needs at least one caption with a final verdict"
NO_PAIRED = "needs paired clips (a clip with a final verdict from every model)"


def mark_not_computable(table: pd.DataFrame, reason: str) -> pd.DataFrame:
    """Return ``table`` without rows, marked "not computable: <reason>" (its columns kept)."""
    empty = table.iloc[:0].copy()
    empty.attrs[NOT_COMPUTABLE] = f"not computable: {reason}"
    return empty


def not_computable(table: pd.DataFrame) -> str:
    """Return why a profile table could not be computed ('' when it was)."""
    return str(table.attrs.get(NOT_COMPUTABLE, ""))


def empty_profile(reason: str = NO_VERDICTS) -> dict[str, pd.DataFrame]:
    """Return every table of the profile marked not computable (a study without verdicts)."""
    return {name: mark_not_computable(pd.DataFrame(), reason) for name in TABLE_CAPTIONS}


def _needs(captions: pd.DataFrame, windows: pd.DataFrame, paired: pd.DataFrame,
           windows_per_caption: int) -> dict[str, str]:
    """Return, per table that the study cannot support, what it needs (known before computing)."""
    needs: dict[str, str] = {}
    verdicts = set(captions["overview_final_verdict"])
    if verdicts != {"accept", "reject"}:
        needs["metric_auc"] = "needs both an accepted and a rejected final overview"
    if paired.empty:
        needs |= dict.fromkeys(PAIRED_TABLES, NO_PAIRED)
    if captions["model"].nunique() < 2:
        needs["pairwise_gaps"] = "needs at least 2 models"
    elif not paired.empty and paired["clip"].nunique() < MIN_CLIPS:
        needs["pairwise_gaps"] = (
            f"needs at least {MIN_CLIPS} paired clips (on one clip every clip-bootstrap "
            "interval has zero width and the additive model cannot tell models from raters)")
    if windows.empty:
        needs |= dict.fromkeys(WINDOW_TABLES, "needs windows (a timeline) on the captions")
    elif not (windows.groupby(["clip", "model"]).size() == windows_per_caption).any():
        needs["windows_rejected_per_caption"] = (
            f"needs captions with exactly {windows_per_caption} windows")
    groups = exposure_groups(captions)  # 0 first, 1 later, -1 unknown
    if not (groups >= 0).any():
        needs["rejection_by_exposure"] = (
            "needs exposure data: captions assigned under an assignment design (annotations "
            "assigned before designs existed have none)")
    elif not (groups == 1).any():
        needs["rejection_by_exposure"] = (
            "needs later exposures (a caption met after another caption of the same clip by "
            "the same annotator); a one-model-per-clip study has none, so it cannot be "
            "anchored by design")
    return needs


def _needs_after(out: Mapping[str, pd.DataFrame], min_verdicts: int) -> dict[str, str]:
    """Return what tables need that shows only in their numbers (every cell blank)."""
    needs: dict[str, str] = {}
    penalty = out["difficulty_penalty"]
    columns = [c for c in penalty.columns if str(c).endswith("_penalty_pts")]
    if not columns or penalty[columns].isna().all().all():
        needs["difficulty_penalty"] = (
            "needs clips labelled handheld and tripod_static, or low and medium/high scene "
            "complexity")
    tests = out["clip_property_tests"]
    if tests.empty or not (tests["buckets"] >= 2).any():
        reason = (f"needs a clip property with at least two buckets of {min_verdicts} or more "
                  "verdicts ('unclear' labels omitted)")
        needs["clip_property_tests"] = reason
        if out["clip_property_buckets"].empty:
            needs["clip_property_buckets"] = reason
    repairs = out["repair_direction"]
    if "repairs" in repairs and not repairs.empty and repairs["repairs"].sum() == 0:
        needs["repair_direction"] = "needs window repairs (changed fields of rejected windows)"
    return needs


def _leaderboard(judged: pd.DataFrame | None, resamples: int, seed: int,
                 out: dict[str, pd.DataFrame], clips: str = "own",
                 lower_better: Sequence[str] = ()) -> pd.DataFrame:
    """The leaderboard; its agreement table is kept aside for the next step."""
    if judged is None:
        judged = pd.DataFrame(columns=["clip", "model", "judge", "value"])
    table, agreement = leaderboard(judged, resamples=min(resamples, 2_000), seed=seed,
                                   clips=clips, lower_better=lower_better)  # type: ignore[arg-type]
    out["_agreement"] = agreement
    table["averaged_over"] = f"{clips} clips"
    return table


def _with_generation(tables: dict[str, pd.DataFrame], generated: pd.DataFrame | None
                     ) -> dict[str, pd.DataFrame]:
    """Table 14 counts generated captions, not verdicts: it is computed without any verdict."""
    if generated is not None and not generated.empty:
        tables["generation"] = generation_details(
            generated, models=sorted(set(generated["model"].astype(str))))
    return tables


def _generation(captions: pd.DataFrame, generated: pd.DataFrame | None, models: list[str]
                ) -> pd.DataFrame:
    """Table 14 over every generated caption; models without a final verdict come last."""
    if generated is None:
        return generation_details(captions, models=models)
    extra = sorted(set(generated["model"]) - set(models))
    return generation_details(generated, models=[*models, *extra])


def _with_handheld_penalty(repairs: pd.DataFrame, penalty: pd.DataFrame) -> pd.DataFrame:
    """Return the repair-direction table with Table 13's handheld penalty as a last column."""
    handheld = penalty.set_index("model")["handheld_penalty_pts"]
    return repairs.assign(handheld_penalty_pts=repairs["model"].map(handheld).astype(float))

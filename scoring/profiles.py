"""The failure profile of a study: from the database to the tidy tables, to an export directory.

The Django side of :mod:`scoring.metrics.analysis`. It reads final verdicts into the two tidy tables
(:func:`tidy_tables`, schema in :mod:`scoring.metrics.analysis.tidy`), runs
:func:`~scoring.metrics.analysis.failure_profile`, and writes everything a researcher needs
(:func:`profile_export`). The web runs the same export as a job: :mod:`scoring.profile_jobs`
keeps its folder, its state and its files.

**Which verdict.** A caption enters the profile when one of its annotations is approved. When
several are (double annotation, for agreement), the profile uses the *earliest approved* one (by
review time, then id) so that every caption counts once and a later second annotation never
changes numbers already reported. Its final verdict is :func:`final_pass` (the QC pass where the
reviewer amended, else the annotator's); ``annotator`` columns are the annotator's own pass.

**Text measures** compare the final text with the model's original, as
:mod:`scoring.metrics.edits` measures it: an accepted unit keeps its original text. Characters are counted
on the normalised text (:func:`scoring.metrics.edits.normalise_text`), the text character similarity is
computed on. Mode keys the tidy schema does not know (a custom taxonomy) are left out.

**Scores** (``score_*`` columns of the captions table, for Table 1), from stored
:class:`~scoring.models.ScoreResult` rows, the newest per caption, metric and judge; each column
names its reference set:

- ``score_approved_<metric>[_<judge>]``: the model's overview against the approved final
  overviews of the clip's *other* captions (``caption_vs_approved``);
- ``score_gold_<metric>[_<judge>]``: against the reviewer corrections of the clip's other
  captions (``caption_vs_gold``); never against the caption's own final text;
- ``score_imported_<metric>[_<judge>]``: against the clip's imported references
  (``caption_vs_reference``);
- ``score_length``: words in the model's overview (lower accepts), always present;
- ``score_external_<metric>``: a score imported from elsewhere (``import_scores``) that read no
  references, a control row; one that compared with the clip's imported references is a
  ``score_imported_external_<metric>`` (:mod:`scoring.external_scores`). Imported scores have
  their own namespace: a row of them stands beside Redline's row of a metric, never instead.

The Matched column of Table 1 reads a third table, ``matched`` (:func:`matched_pairs`): one row
per accepted-rejected pair of a clip, metric and reference set, both scored against the same
reference set leaving both out (``matched_approved`` / ``matched_gold``).

Edit-size metrics (words changed, similarity) and the ``overview`` subject (the model's overview
against its own final text) are not Table 1 scores: they are the verdict's own size.
A study nobody has scored has only ``score_length``.

**Export directory**: ``tables/<name>.csv`` and ``.json`` per table, ``figures/<name>.png`` and
``.svg`` per figure, ``report.html`` (self-contained), ``tidy/captions.csv``,
``tidy/matched.csv`` and
``tidy/windows.csv`` (the analysis inputs) and ``manifest.json`` listing them all.
"""

from __future__ import annotations

import io
import json
import os
import re
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from django.contrib.auth import get_user_model

from annotation.errors import ServiceError
from annotation.models import Annotation, CandidateModel, CorrectionPass, Study
from annotation.rules import workflow
from annotation.selectors.counted import approved_excluded_by_withdrawal, counted_annotations
from annotation.services.annotation_common import pass_snapshot
from annotation.services.workflow import final_pass
from scoring.external_scores import external_judges as external_judge_rows
from scoring.external_scores import lower_is_better
from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS, failure_profile
from scoring.metrics.analysis.samples import SAMPLES_NOTE
from scoring.metrics.analysis.sensitivity import CAPTION as SENSITIVITY_CAPTION
from scoring.metrics.analysis.tidy import (
    CAPTION_COLUMNS,
    EXPOSURE_COLUMNS,
    FIELDS,
    OPTIONAL_CAPTION_COLUMNS,
    PROPERTIES,
    UNIT_MODES,
    WINDOW_COLUMNS,
    Column,
)
from scoring.metrics.edits import EditSizing, normalise_text, words
from scoring.metrics.exports import CorrectedCaption
from scoring.metrics.final import final_caption
from scoring.metrics.profile_files import write_profile_files
from scoring.metrics.registry import METRICS
from scoring.metrics.report import cell_value

ACCEPT = CorrectionPass.Verdict.ACCEPT
REJECT = CorrectionPass.Verdict.REJECT
#: The per-model table the profile page shows (Table 10).
MAIN_TABLE = "model_profile"
VERDICT_CHOICE_NOTE = (
    "One final verdict per caption: where several annotations of a caption were approved "
    "(double annotation), the earliest approved one is used.")
SCORE_NOTE = (
    "Scores: score_approved_<metric>[_<judge>] compare the model's overview with the approved "
    "final overviews of the clip's other captions; score_gold_<metric>[_<judge>] with the "
    "reviewer corrections of the clip's other captions (never the caption's own final text); "
    "score_imported_<metric>[_<judge>] with the clip's imported references; score_external_<metric> "
    "and score_imported_external_<metric> are scores imported from elsewhere; score_length is "
    "the number of words of the model's overview (lower accepts). tidy/matched.csv holds the "
    "leave-both-out scores of Table 1's Matched column. Run a study scoring job after new "
    "verdicts: the leave-out scores are computed by it.")

Progress = Callable[[int, int, str], None]


class ProfileError(ServiceError):
    """The profile cannot be built (e.g. the study has no final verdicts yet)."""


# --------------------------------------------------------------------------- final verdicts

WITHDRAWN_PARAMETER = "approved annotations excluded by withdrawal"


def withdrawn_note(excluded: int) -> str:
    """The export's note on withdrawals, the same in the report and the manifest."""
    if not excluded:
        return "Withdrawals: no approved annotation was excluded (nobody whose work was approved withdrew)."
    return (f"Withdrawals: {excluded} approved annotation{'s' if excluded != 1 else ''} of people who withdrew "
            f"from the study {'were' if excluded != 1 else 'was'} excluded from every table, figure and tidy file.")



def final_annotations(study: Study, clip_id: int | None = None) -> list[Annotation]:
    """Return one approved annotation per caption (the earliest approved), by clip and model;
    of one clip when ``clip_id`` is given."""
    # Only the study's work counts: gold verdicts, practice attempts and hidden gold checks do
    # not, nor any annotation of a gold item (annotation.selectors.counted.counted_annotations).
    approved = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    if clip_id is not None:
        approved = approved.filter(caption__clip_id=clip_id)
    approved = (
        approved.select_related("caption__clip", "caption__model", "annotator", "reviewer")
        .prefetch_related("passes__windows", "caption__windows")
        .order_by("reviewed_at", "pk")
    )
    chosen: dict[int, Annotation] = {}
    for annotation in approved:
        chosen.setdefault(annotation.caption_id, annotation)
    return sorted(chosen.values(),
                  key=lambda a: (a.caption.clip.name, a.caption.model.name, a.pk))


def _passes(annotation: Annotation) -> tuple[CorrectionPass, CorrectionPass]:
    """Return the annotator's pass and the final pass of an approved annotation."""
    passes = {p.kind: p for p in annotation.passes.all()}
    mine = passes.get(CorrectionPass.Kind.ANNOTATOR)
    final = final_pass(annotation)
    if mine is None or final is None:
        raise ProfileError(f"Annotation {annotation.pk} is approved but has no annotator pass.")
    return mine, final


def _verdict(value: str) -> str:
    # Approved passes are complete (submit and amend refuse undecided units); '' cannot occur.
    return REJECT if value == REJECT else ACCEPT


def final_of(annotation: Annotation, sizing: EditSizing | None = None) -> CorrectedCaption:
    """The caption of an approved annotation as its final pass leaves it: the database's side of
    :func:`scoring.metrics.final.final_caption`, which every final text and edit size comes from.

    Reads the passes, windows and people prefetched by :func:`final_annotations` (no query of its
    own then). ``sizing`` defaults to the study's (its caption language).
    """
    _, final = _passes(annotation)
    caption = annotation.caption
    originals = {w.pk: w for w in caption.windows.all()}
    rows = sorted(final.windows.all(), key=lambda row: originals[row.window_id].index)
    for row in rows:
        row.window = originals[row.window_id]  # the prefetched window: no query per row
    return final_caption(
        clip=caption.clip.name,
        model=caption.model.name,
        original_overview=caption.overview,
        original_windows=[{"index": w.index, "start": w.start, "end": w.end, "scene": w.scene,
                           "shot": w.shot} for w in originals.values()],
        final=pass_snapshot(final, rows),
        final_kind=final.kind,
        sizing=sizing or EditSizing.of(caption.clip.study),
        annotator=annotation.annotator.get_username(),
        reviewer=annotation.reviewer.get_username() if annotation.reviewer else "",
    )


def _chars(text: str) -> int:
    return len(normalise_text(text))


# --------------------------------------------------------------------------- tidy tables


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


#: Stored subject -> the reference set its scores stand for in Table 1.
REFERENCE_SETS: dict[str, str] = {
    "caption_vs_approved": "approved",
    "caption_vs_gold": "gold",
    "caption_vs_reference": "imported",
    "matched_approved": "approved",
    "matched_gold": "gold",
}


def score_column(subject: str, metric: str, judge: str = "") -> str:
    """Return the tidy column of a stored score (see the module docstring)."""
    return (f"score_{REFERENCE_SETS[subject]}_" + _slug(metric)
            + (f"_{_slug(judge)}" if judge else ""))


def _table1_rows(study: Study, subjects: Sequence[str]):
    """Stored Table 1 scores of ``subjects``, oldest first (a re-run replaces what came before)."""
    from scoring.models import ScoreResult

    return (
        ScoreResult.objects.filter(study=study, subject__in=list(subjects))
        .exclude(metric__in=[name for name, m in METRICS.items() if m.family == "edit"])
        .order_by("computed_at", "pk")
        .values_list("caption_id", "item_key", "subject", "metric", "judge_or_backend", "value")
    )


def _stored_scores(study: Study, chosen: Mapping[int, int]) -> dict[int, dict[str, float]]:
    """Return ``{caption id: {score column: value}}`` from the study's stored scores."""
    scores: dict[int, dict[str, float]] = {}
    rows = _table1_rows(study, ["caption_vs_approved", "caption_vs_gold", "caption_vs_reference"])
    for caption_id, _, subject, metric, judge, value in rows:
        if caption_id not in chosen:
            continue
        column = score_column(subject, metric, judge)
        scores.setdefault(caption_id, {})[column] = float("nan") if value is None else value
    return scores


MATCHED_COLUMNS = ["clip", "score", "accepted_model", "rejected_model", "accepted_value",
                   "rejected_value"]


def matched_pairs(study: Study, verdicts: Mapping[int, tuple[str, str, str]]) -> pd.DataFrame:
    """Return the leave-both-out scores of Table 1's Matched column, one row per pair and score.

    ``verdicts`` maps each caption with a final verdict to ``(clip, model, verdict)``. A pair
    counts when both of its sides were scored and its accepted and rejected captions still have
    those final verdicts. Columns: :data:`MATCHED_COLUMNS` (``score`` is the captions table's
    column of the same metric and reference set).
    """
    sides: dict[tuple[str, int, int], dict[int, float]] = {}
    for caption_id, key, subject, metric, judge, value in _table1_rows(
            study, ["matched_approved", "matched_gold"]):
        _, _, good, bad, _ = key.split(":")
        column = score_column(subject, metric, judge)
        sides.setdefault((column, int(good), int(bad)), {})[caption_id] = (
            float("nan") if value is None else value)
    rows = []
    for (column, good, bad), values in sides.items():
        if not {good, bad} <= values.keys() or not {good, bad} <= verdicts.keys():
            continue
        clip, good_model, good_verdict = verdicts[good]
        _, bad_model, bad_verdict = verdicts[bad]
        if (good_verdict, bad_verdict) != ("accept", "reject"):
            continue
        rows.append({"clip": clip, "score": column, "accepted_model": good_model,
                     "rejected_model": bad_model, "accepted_value": values[good],
                     "rejected_value": values[bad]})
    frame = pd.DataFrame(rows, columns=MATCHED_COLUMNS)
    frame[["accepted_value", "rejected_value"]] = frame[
        ["accepted_value", "rejected_value"]].astype(float)
    return frame.sort_values(["score", "clip", "accepted_model", "rejected_model"],
                             ignore_index=True)


def _frame(rows: list[dict[str, Any]], columns: Sequence[Column], extra: Sequence[str] = ()
           ) -> pd.DataFrame:
    """Return ``rows`` as a DataFrame with each schema column in the dtype of its kind."""
    names = [c.name for c in columns] + [name for name in extra]
    frame = pd.DataFrame(rows, columns=names)
    for column in columns:
        if column.kind == "flag":
            frame[column.name] = frame[column.name].astype(bool)
        elif column.kind == "count":
            frame[column.name] = frame[column.name].astype("int64")
        elif column.kind in ("share", "number"):
            frame[column.name] = frame[column.name].astype(float)
        else:
            frame[column.name] = frame[column.name].astype(object).fillna("").astype(str)
    for name in extra:
        frame[name] = frame[name].astype(float)
    return frame


def _window_rows(annotation: Annotation, mine: CorrectionPass, final: CorrectedCaption
                 ) -> list[dict[str, Any]]:
    annotator_rows = {row.window_id: row for row in mine.windows.all()}
    index_of = {w.pk: w.index for w in annotation.caption.windows.all()}
    annotator_by_index = {index_of[window_id]: row for window_id, row in annotator_rows.items()}
    rows = []
    for window in final.windows:
        row: dict[str, Any] = {"clip": final.clip, "model": final.model, "index": window.index}
        correction = annotator_by_index.get(window.index)
        verdict = _verdict(correction.verdict if correction else "")
        modes = set(correction.modes) if correction and verdict == REJECT else set()
        row["annotator_verdict"] = verdict
        row.update({f"annotator_{mode}": mode in modes for mode in UNIT_MODES})
        row["final_verdict"] = window.verdict
        row.update({f"final_{mode}": mode in window.modes for mode in UNIT_MODES})
        for field in FIELDS:
            original = getattr(window, f"original_{field}")
            corrected = getattr(window, field)
            size = final.field_size(window, field)
            row.update({
                f"{field}_original_chars": _chars(original),
                f"{field}_corrected_chars": _chars(corrected),
                f"{field}_original_words": size.original_words,
                f"{field}_corrected_words": size.corrected_words,
                f"{field}_words_changed": size.words_changed,
                f"{field}_char_similarity": size.char_similarity,
                f"{field}_changed": normalise_text(original) != normalise_text(corrected),
            })
        rows.append(row)
    return rows


def _optional(caption_meta: Mapping[str, Any], model: CandidateModel) -> dict[str, str]:
    providers = [str(p) for p in model.providers or [] if str(p).strip()]
    return {
        "identifier": model.identifier.strip(),
        "route": str(caption_meta.get("route") or model.route).strip(),
        "provider": str(caption_meta.get("provider")
                        or (providers[0] if len(providers) == 1 else "")).strip(),
    }


def tidy_tables(study: Study, *, allow_empty: bool = False
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return the study's ``(captions, windows)`` tidy tables (schema: :mod:`.analysis.tidy`).

    One caption row per caption with an approved annotation (see the module docstring for which
    one). The optional ``identifier``, ``route`` and ``provider`` columns are included only when
    every caption has one (provider: the caption's ``meta.provider``, else the model's provider
    when it lists exactly one). ``queue_position`` and ``exposure`` are always included, empty
    for annotations assigned before assignment designs existed. Raises :class:`ProfileError`
    when no caption has a final verdict, unless ``allow_empty`` (then both tables have their
    columns and no rows).
    """
    annotations = final_annotations(study)
    if not annotations and not allow_empty:
        raise ProfileError(f"Study {study.slug!r} has no final verdicts yet: approve some "
                           "annotations first.")
    chosen = {a.caption_id: a.pk for a in annotations}
    stored = _stored_scores(study, chosen)
    from scoring.external_scores import external_columns

    for caption_id, values in external_columns(study, list(chosen)).items():
        stored.setdefault(caption_id, {}).update(values)
    caption_rows: list[dict[str, Any]] = []
    window_rows: list[dict[str, Any]] = []
    optional: list[dict[str, str]] = []
    met: list[dict[str, int | None]] = []
    sizing = EditSizing.of(study)
    for annotation in annotations:
        caption = annotation.caption
        clip, model = caption.clip, caption.model
        mine, _ = _passes(annotation)
        final = final_of(annotation, sizing)
        original, corrected = final.original_overview, final.overview
        size = final.overview_size()
        mine_verdict = _verdict(mine.overview_verdict)
        mine_modes = set(mine.overview_modes) if mine_verdict == REJECT else set()
        row: dict[str, Any] = {
            "clip": clip.name,
            "model": model.name,
            "annotator": final.annotator,
            "reviewer": final.reviewer,
            "overview_annotator_verdict": mine_verdict,
            **{f"overview_annotator_{mode}": mode in mine_modes for mode in UNIT_MODES},
            "segmentation_annotator_verdict": _verdict(mine.segmentation_verdict),
            "overview_final_verdict": final.overview_verdict,
            **{f"overview_final_{mode}": mode in final.overview_modes for mode in UNIT_MODES},
            "segmentation_final_verdict": final.segmentation_verdict,
        }
        row.update({
            "overview_words_changed": size.words_changed,
            "overview_char_similarity": size.char_similarity,
            "overview_original_chars": _chars(original),
            "overview_corrected_chars": _chars(corrected),
            "manipulated": clip.manipulated,
            "input_tokens_per_second": (float("nan") if caption.input_tokens_per_second is None
                                        else caption.input_tokens_per_second),
            "retried": caption.retried,
            "re_encoded": caption.re_encoded,
            "invalid_kept": caption.invalid_kept,
            "score_length": float(len(words(original, study.caption_language))),
        })
        row.update({name: getattr(clip, name) for name in PROPERTIES})
        row.update(stored.get(caption.pk, {}))
        caption_rows.append(row)
        optional.append(_optional(caption.meta or {}, model))
        met.append({"queue_position": annotation.queue_position,
                    "exposure": annotation.exposure})
        window_rows += _window_rows(annotation, mine, final)
    scores = ["score_length"] + sorted({c for values in stored.values() for c in values})
    captions = _frame(caption_rows, CAPTION_COLUMNS, scores)
    for column in OPTIONAL_CAPTION_COLUMNS:
        if column.name in EXPOSURE_COLUMNS:
            continue
        values = [item[column.name] for item in optional]
        if all(values):
            captions[column.name] = values
    for name in EXPOSURE_COLUMNS:
        # Always written, empty where the annotation was assigned before designs existed.
        captions[name] = pd.array([item[name] for item in met], dtype="Int64")
    return captions, _frame(window_rows, WINDOW_COLUMNS)


GENERATED_COLUMNS = ["clip", "model", "identifier", "route", "provider",
                     "input_tokens_per_second", "retried", "re_encoded", "invalid_kept"]


def generated_captions(study: Study) -> pd.DataFrame:
    """Return every caption of the study (final verdict or not) with its generation details:
    Table 14 counts every clip sent. Columns: :data:`GENERATED_COLUMNS`."""
    from annotation.models import Caption

    rows = []
    for caption in Caption.objects.filter(clip__study=study).select_related(
            "clip", "model").order_by("clip__name", "model__name"):
        rows.append({
            "clip": caption.clip.name, "model": caption.model.name,
            **_optional(caption.meta or {}, caption.model),
            "input_tokens_per_second": (float("nan") if caption.input_tokens_per_second is None
                                        else caption.input_tokens_per_second),
            "retried": caption.retried, "re_encoded": caption.re_encoded,
            "invalid_kept": caption.invalid_kept})
    frame = pd.DataFrame(rows, columns=GENERATED_COLUMNS)
    frame["input_tokens_per_second"] = frame["input_tokens_per_second"].astype(float)
    for flag in ("retried", "re_encoded", "invalid_kept"):
        frame[flag] = frame[flag].astype(bool)
    for column in ("identifier", "route", "provider"):
        if not frame[column].astype(bool).all():
            frame = frame.drop(columns=column)  # as in the captions table: all or none
    return frame


#: Leaderboard reference choice -> the stored subject whose scores it ranks.
LEADERBOARD_REFERENCES: dict[str, str] = {
    "corrected": "overview",
    "approved": "caption_vs_approved",
    "imported": "caption_vs_reference",
}


def judged_scores(
    study: Study,
    *,
    metric: str = "hm_cf",
    judges: Sequence[str] | None = None,
    references: str = "corrected",
) -> pd.DataFrame:
    """Return the stored per-clip scores the leaderboard ranks: columns clip, model, judge, value.

    ``references``: ``corrected`` (default), each model's overview against its own final
    corrected overview (the profile's chosen verdict); ``approved``, against the approved finals
    of the clip's other captions; ``imported``, against the clip's imported references. Only
    judged metrics (one value per judge) make sense here; ``judges`` keeps only those judges.
    The newest stored value per caption and judge wins.
    """
    if references not in LEADERBOARD_REFERENCES:
        raise ProfileError(f"Unknown references {references!r}; choose from "
                           f"{', '.join(LEADERBOARD_REFERENCES)}.")
    if metric not in METRICS:
        raise ProfileError(f"Unknown metric {metric!r}.")
    from scoring.models import ScoreResult

    subject = LEADERBOARD_REFERENCES[references]
    rows = ScoreResult.objects.filter(study=study, subject=subject, metric=metric).exclude(
        judge_or_backend="")
    if judges:
        rows = rows.filter(judge_or_backend__in=list(judges))
    if subject == "overview":
        chosen = [a.pk for a in final_annotations(study)]
        rows = rows.filter(annotation_id__in=chosen)
    values: dict[tuple[str, str, str], float] = {}
    for clip, model, judge, value in rows.order_by("computed_at", "pk").values_list(
            "caption__clip__name", "caption__model__name", "judge_or_backend", "value"):
        values[(clip, model, judge)] = float("nan") if value is None else value
    frame = pd.DataFrame([{"clip": c, "model": m, "judge": j, "value": v}
                          for (c, m, j), v in values.items()],
                         columns=["clip", "model", "judge", "value"])
    frame["value"] = frame["value"].astype(float)
    return frame


def matched_table(study: Study) -> pd.DataFrame:
    """Return the study's Table 1 leave-both-out pairs (:func:`matched_pairs`)."""
    verdicts = {}
    for annotation in final_annotations(study):
        final = final_pass(annotation)
        verdict = _verdict(final.overview_verdict) if final is not None else ""
        verdicts[annotation.caption_id] = (annotation.caption.clip.name,
                                           annotation.caption.model.name, verdict)
    return matched_pairs(study, verdicts)


# --------------------------------------------------------------------------- corrected captions


def corrected_captions(study: Study, model: CandidateModel | None = None) -> list[CorrectedCaption]:
    """Return the final verdicts of the study (of one model) as :class:`CorrectedCaption`
    (:func:`final_of` each)."""
    sizing = EditSizing.of(study)
    return [final_of(annotation, sizing) for annotation in final_annotations(study)
            if model is None or annotation.caption.model_id == model.pk]


# --------------------------------------------------------------------------- the export


def usual_window_count(windows: pd.DataFrame, default: int = 4) -> int:
    """Return the most common number of windows per caption (the larger on a tie).

    Figure 4 compares captions with exactly K windows against independent windows; the paper's
    models wrote four, a study's models may write another number.
    """
    if windows.empty:
        return default
    counts = windows.groupby(["clip", "model"]).size().value_counts()
    return int(max(counts[counts == counts.max()].index))


def export_steps() -> int:
    """Return how many progress steps :func:`profile_export` reports."""
    return 1 + len(TABLE_CAPTIONS) + len(FIGURES) + 1


def profile_export(
    *,
    study: Study,
    out_dir: str | Path,
    resamples: int = 20_000,
    adjusted_resamples: int = 4_000,
    seed: int = 0,
    paired_only: bool = False,
    progress: Progress | None = None,
    leaderboard_clips: str = "own",
    external_judges: Sequence[str] = (),
) -> dict[str, Any]:
    """Write the study's failure profile into ``out_dir``; return the manifest it writes.

    ``external_judges``: imported metrics (``import_scores``) the leaderboard ranks by as
    judges too, oriented by their direction. ``leaderboard_clips``: ``own`` (default: each
    model's means over its own scored clips, as the paper) or ``common`` (only clips every
    model has).

    ``progress(done, total, message)`` is called before each step (tidy tables, each table,
    each figure, the report). A study in any state exports: a table or figure it cannot support
    (no verdicts yet, one model, no paired clips...) is written marked "not computable: needs
    ..." (:func:`scoring.metrics.analysis.profile.not_computable`). The study's word thresholds and
    near-total cut are used, and Figure 4 looks at captions with the study's usual number of windows
    (:func:`usual_window_count`). A figure whose table is not computable is listed under
    ``figures_not_computable``; one that fails to draw under ``figures_failed``; both are named
    in the report.
    """
    out = Path(out_dir)
    total = export_steps()
    done = 0

    def step(message: str) -> None:
        nonlocal done
        if progress is not None:
            progress(done, total, message)
        done += 1

    step("building the tidy tables from the final verdicts")
    captions, windows = tidy_tables(study, allow_empty=True)
    matched = matched_table(study)
    judged = judged_scores(study)
    lower_judges: list[str] = []
    if external_judges:
        try:
            extra, lower_judges = external_judge_rows(study, external_judges)
        except ServiceError as error:
            raise ProfileError(str(error)) from None
        judged = pd.concat([judged, extra], ignore_index=True)
    per_caption = usual_window_count(windows)
    tables = failure_profile(
        captions, windows, resamples=resamples, adjusted_resamples=adjusted_resamples, seed=seed,
        paired_only=paired_only, progress=lambda name: step(f"table {name}"),
        thresholds=tuple(int(t) for t in study.word_thresholds),
        near_total_cut=study.near_total_cut, windows_per_caption=per_caption, matched=matched,
        generated=generated_captions(study), judged=judged, leaderboard_clips=leaderboard_clips,
        lower_accepts=lower_is_better(study), lower_better_judges=lower_judges,
    )
    sensitivity, below = gold_sensitivity(study, captions, windows, resamples=resamples, seed=seed,
                                          lower_accepts=lower_is_better(study))
    withdrawn = approved_excluded_by_withdrawal(study)
    parameters = {
        "study": f"{study.name} ({study.slug})",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "captions with a final verdict": len(captions),
        "windows": len(windows),
        "models": captions["model"].nunique(),
        "clips": captions["clip"].nunique(),
        WITHDRAWN_PARAMETER: withdrawn,
        "bootstrap resamples": resamples,
        "adjusted-model resamples": adjusted_resamples,
        "seed": seed,
        "paired subset only": "yes" if paired_only else "no",
        "word thresholds": ", ".join(str(t) for t in study.word_thresholds),
        "near-total cut": study.near_total_cut,
        "windows per caption in Figure 4 (the most common count)": per_caption,
        "leaderboard score": "hm_cf of each model's overview against its final corrected "
                             "overview, per embedding judge",
        "leaderboard clips": ("each model's own scored clips" if leaderboard_clips == "own"
                              else "clips scored for every model (common clips)"),
    }
    if sensitivity is not None:
        parameters["gold-agreement threshold of the sensitivity table"] = study.gold_drift_threshold
        parameters["annotators below it (left out of its 'without' columns)"] = ", ".join(below) or "none"
    written = write_profile_files(
        out, title=f"Failure profile: {study.name}", captions=captions, windows=windows,
        tables=tables, parameters=parameters, notes=[VERDICT_CHOICE_NOTE, SCORE_NOTE, SAMPLES_NOTE,
                                                     withdrawn_note(withdrawn)],
        step=step, matched=matched, judged=judged, provenance={"excluded_by_withdrawal": withdrawn})
    if sensitivity is not None:
        written["tables"].append(write_extra_table(out, SENSITIVITY_TABLE, SENSITIVITY_CAPTION, sensitivity))

    manifest = {
        "study": study.slug,
        "parameters": {key: cell_value(value) for key, value in parameters.items()},
        "options": {"resamples": resamples, "adjusted_resamples": adjusted_resamples,
                    "seed": seed, "paired_only": paired_only,
                    "leaderboard_clips": leaderboard_clips},
        "tables": written["tables"],
        "figures": written["figures"],
        "figures_failed": written["figures_failed"],
        "figures_not_computable": written["figures_not_computable"],
        "excluded_by_withdrawal": withdrawn,
        "report": "report.html",
        "tidy": ["tidy/captions.csv", "tidy/windows.csv", "tidy/matched.csv",
                 "tidy/judged.csv"],
        "notes": written["notes"],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if progress is not None:
        progress(total, total, "done")
    return manifest


SENSITIVITY_TABLE = "annotator_sensitivity"


def gold_sensitivity(
    study: Study, captions: pd.DataFrame, windows: pd.DataFrame, *, resamples: int, seed: int,
    lower_accepts: Sequence[str],
) -> tuple[pd.DataFrame | None, list[str]]:
    """The sensitivity table of the profile to its annotators (``annotator_sensitivity``), and
    the pseudonyms of those it leaves out: annotators whose overview agreement with the gold
    verdicts of their hidden gold checks (:mod:`annotation.rules.gold_agreement`, over at least its
    minimum of items) is below the study's ``gold_drift_threshold``. None when no annotator of
    the study met a gold check: there is nothing to compare."""
    from annotation.rules.gold_agreement import gold_agreement
    from annotation.rules.pseudonyms import pseudonym
    from annotation.selectors.annotator_quality import gold_pairs
    from scoring.metrics.analysis.sensitivity import annotator_sensitivity

    pairs = gold_pairs(study)
    if not pairs:
        return None, []
    sizing = EditSizing.of(study)
    threshold = float(study.gold_drift_threshold)
    below = []
    for user_id, items in pairs.items():
        agreement = gold_agreement(items, sizing=sizing).overview_agreement
        if agreement is not None and agreement < threshold:
            below.append(user_id)
    names = dict(get_user_model().objects.filter(pk__in=below).values_list("pk", "username"))
    table = annotator_sensitivity(captions, windows, excluded={names[pk] for pk in below},
                                  resamples=min(resamples, SENSITIVITY_RESAMPLES), seed=seed,
                                  lower_accepts=lower_accepts)
    return table, sorted(pseudonym(study.release_secret, pk) for pk in below)


#: Resamples of the sensitivity table's intervals at most (it computes Table 1 twice more).
SENSITIVITY_RESAMPLES = 4_000


def write_extra_table(out: Path, name: str, caption: str, table: pd.DataFrame) -> dict[str, Any]:
    """Write a table that is not one of the profile's numbered ones (``tables/<name>.csv`` and
    ``.json``, as :func:`~scoring.metrics.profile_files.write_profile_files` writes those);
    return its manifest entry."""
    from scoring.metrics.profile_files import write_csv
    from scoring.metrics.report import table_records

    records = table_records(table)
    columns = [str(c) for c in table.columns]
    write_csv(out / "tables" / f"{name}.csv", columns, records)
    document = {"name": name, "caption": caption, "columns": columns, "rows": records}
    (out / "tables" / f"{name}.json").write_text(
        json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return {"name": name, "caption": caption, "rows": len(records), "csv": f"tables/{name}.csv",
            "json": f"tables/{name}.json"}


def export_files(manifest: Mapping[str, Any]) -> list[str]:
    """Return every file of an export, relative to its directory, in a stable order."""
    files = [manifest["report"], "manifest.json", *manifest["tidy"]]
    for table in manifest["tables"]:
        files += [table["csv"], table["json"]]
    for figure in manifest["figures"]:
        files += [figure["png"], figure["svg"]]
    return files


def export_zip(out_dir: str | Path, zip_path: str | Path, manifest: Mapping[str, Any]) -> Path:
    """Write every file of the export in ``out_dir`` into one zip file; return its path."""
    out, target = Path(out_dir), Path(zip_path)
    # Written under a temporary name and renamed once whole; a failed write leaves nothing.
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}")
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
            for name in export_files(manifest):
                bundle.write(out / name, arcname=name)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def vtt_zip(files: Mapping[str, str]) -> bytes:
    """Return ``{name: text}`` as the bytes of a zip file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, text in files.items():
            bundle.writestr(name, text)
    return buffer.getvalue()

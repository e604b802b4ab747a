"""Scores from elsewhere, attached to a study's captions: the import service, and what the
profile reads of them (Table 1 rows and leaderboard judges).

The file format is :mod:`scoring.metrics.external`'s. An import is all-or-nothing: every
problem is reported (``line N, field: reason``) and nothing is stored when there is one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
from django.db import transaction
from django.utils import timezone

from annotation.models import Caption, Study
from annotation.services.errors import ImportRefused
from annotation.services.study_state import Write, study_require
from scoring.metrics.external import NO_DEFAULTS, Defaults, parse_scores
from scoring.models import ExternalScore

#: Column prefix of an imported score in the tidy captions table: a control of Table 1
#: (``score_external_<metric>``) or, with the clip's imported references, an imported row.
CONTROL_PREFIX = "score_external_"
IMPORTED_PREFIX = "score_imported_"


@dataclass(frozen=True)
class ScoresImportReport:
    stored: int
    metrics: list[str]


def external_scores_import(*, study: Study, data: bytes, defaults: Defaults = NO_DEFAULTS
                           ) -> ScoresImportReport:
    """Store the scores of a JSON Lines file for the study's captions, or refuse it whole.

    Refused (:class:`ImportRefused`, every problem named by line) for: bad lines (see
    :func:`scoring.metrics.external.parse_scores`), a clip or model the study has no caption
    for, a score already stored (same caption, metric, version and source), and a metric given
    another direction or reference set than the study already has for it.
    """
    study_require(study, Write.SCORING)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ImportRefused([f"the file is not UTF-8 (byte {error.start})"]) from None
    lines, problems = parse_scores(text.splitlines(), defaults)
    captions = {(c.clip.name, c.model.name): c for c in Caption.objects.filter(
        clip__study=study).select_related("clip", "model")}
    stored = set(ExternalScore.objects.filter(study=study).values_list(
        "caption__clip__name", "caption__model__name", "metric", "version", "source"))
    kinds = {metric: (direction, references) for metric, direction, references in
             ExternalScore.objects.filter(study=study).values_list(
                 "metric", "direction", "references").distinct()}
    rows = []
    for item in lines:
        caption = captions.get((item.clip, item.model))
        if caption is None:
            clips = {clip for clip, _ in captions}
            field = "model" if item.clip in clips else "clip"
            problems.append(f"line {item.line}, {field}: the study has no caption of model "
                            f"{item.model!r} for clip {item.clip!r}")
            continue
        if item.key in stored:
            problems.append(f"line {item.line}: this score is already stored (clip "
                            f"{item.clip!r}, model {item.model!r}, metric {item.metric!r}, "
                            f"version {item.version!r}, source {item.source!r})")
            continue
        kind = (item.direction, item.references)
        if kinds.setdefault(item.metric, kind) != kind:
            direction, references = kinds[item.metric]
            problems.append(f"line {item.line}, direction: metric {item.metric!r} is "
                            f"{direction} is better with references {references} in this study")
            continue
        rows.append(ExternalScore(study=study, caption=caption, metric=item.metric,
                                  direction=item.direction, version=item.version,
                                  source=item.source, references=item.references,
                                  value=item.value, imported_at=timezone.now()))
    if problems:
        raise ImportRefused(problems)
    if not rows:
        raise ImportRefused(["the file holds no score"])
    with transaction.atomic():
        ExternalScore.objects.bulk_create(rows)
    return ScoresImportReport(stored=len(rows), metrics=sorted({r.metric for r in rows}))


def external_column(metric: str, references: str) -> str:
    """The tidy captions column of an imported metric."""
    return (IMPORTED_PREFIX if references == "imported" else CONTROL_PREFIX) + metric


def external_columns(study: Study, caption_ids: Sequence[int]) -> dict[int, dict[str, float]]:
    """``{caption id: {column: value}}`` of the study's imported scores; the newest import of a
    caption and metric wins (several versions or sources: the newest)."""
    out: dict[int, dict[str, float]] = {}
    for caption_id, metric, references, value in ExternalScore.objects.filter(
            study=study, caption_id__in=list(caption_ids)).order_by(
            "imported_at", "pk").values_list("caption_id", "metric", "references", "value"):
        out.setdefault(caption_id, {})[external_column(metric, references)] = value
    return out


def lower_is_better(study: Study) -> list[str]:
    """The tidy columns of imported metrics for which lower is better (Table 1 orients them)."""
    return sorted({external_column(metric, references) for metric, references in
                   ExternalScore.objects.filter(study=study, direction="lower").values_list(
                       "metric", "references").distinct()})


def external_judges(study: Study, metrics: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Imported metrics as leaderboard judges: (rows clip, model, judge, value; the judges for
    which lower is better). The judge is named after the metric; the newest value wins."""
    rows = ExternalScore.objects.filter(study=study, metric__in=list(metrics)).order_by(
        "imported_at", "pk").values_list("caption__clip__name", "caption__model__name", "metric",
                                         "value", "direction")
    values: dict[tuple[str, str, str], float] = {}
    lower = set()
    for clip, model, metric, value, direction in rows:
        values[(clip, model, metric)] = value
        if direction == "lower":
            lower.add(metric)
    missing = sorted(set(metrics) - {metric for _, _, metric in values})
    if missing:
        raise ImportRefused([f"no imported scores of metric {name!r} in this study"
                             for name in missing])
    frame = pd.DataFrame([{"clip": c, "model": m, "judge": j, "value": v}
                          for (c, m, j), v in values.items()],
                         columns=["clip", "model", "judge", "value"])
    return frame, sorted(lower)

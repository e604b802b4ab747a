"""LLMFactsF1 results of a study as the profile page shows them: per model, and one result's
facts and labels on request. Read-only queries over stored ScoreResult rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from annotation.models import Study
from scoring.families import LLMFACTS_METRIC
from scoring.models import CAPTION_SUBJECTS, ScoreResult


@dataclass
class ModelLLMFacts:
    """Mean LLMFactsF1 of one model's final verdicts for one subject, LLM and method version."""

    model: str
    subject: str
    backend: str
    version: str
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.results)

    @property
    def mean(self) -> float | None:
        values = [row["value"] for row in self.results if row["value"] is not None]
        return fmean(values) if values else None


def llmfacts_by_model(*, study: Study) -> list[ModelLLMFacts]:
    """Every stored LLMFactsF1 of ``study`` grouped by (model, subject, LLM, version), ordered by
    model then subject (overview first); each group lists its results (id, clip, value)."""
    rows = (
        ScoreResult.objects.filter(study=study, metric=LLMFACTS_METRIC.name)
        # Only the verdicts' own subjects: Table 1's reference sets are not one verdict's score.
        .exclude(subject__in=CAPTION_SUBJECTS)
        .values(
            "pk", "subject", "judge_or_backend", "metric_version", "value",
            "caption__model__name", "caption__clip__name", "window__index",
        )
        .order_by("caption__model__name", "subject", "caption__clip__name", "window__index")
    )  # fmt: skip
    order = {subject: position for position, subject in enumerate(ScoreResult.Subject.values)}
    groups: dict[tuple[str, str, str, str], ModelLLMFacts] = {}
    for row in rows:
        key = (
            row["caption__model__name"],
            row["subject"],
            row["judge_or_backend"],
            row["metric_version"],
        )
        group = groups.setdefault(key, ModelLLMFacts(*key))
        group.results.append(
            {
                "id": row["pk"],
                "clip": row["caption__clip__name"],
                "window": row["window__index"],
                "value": row["value"],
            }
        )
    return sorted(groups.values(), key=lambda g: (g.model, order.get(g.subject, 99), g.version))


def llmfacts_result(*, study: Study, result_id: int) -> ScoreResult | None:
    """One LLMFactsF1 result of ``study`` with its caption, model and clip, or None."""
    return (
        ScoreResult.objects.filter(study=study, metric=LLMFACTS_METRIC.name, pk=result_id)
        .select_related("caption__model", "caption__clip", "window")
        .first()
    )

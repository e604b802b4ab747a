"""Assigning captions to annotators (the plan is annotation.rules.assignment's; this stores it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from django.db import transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.models import (
    Annotation,
    AuditEvent,
    Caption,
    Membership,
    Study,
)
from annotation.rules import assignment
from annotation.selectors.counted import holding_annotations
from annotation.services import bulk
from annotation.services.lifecycle import study_require_setup
from annotation.services.study_state import Write, study_require
from annotation.services.taxonomy import taxonomy_freeze

# --------------------------------------------------------------------------- assignment


ASSIGN_BATCH = 2000


@dataclass
class AssignmentReport:
    created: int
    skipped: int
    design: str = assignment.ONE_MODEL_PER_CLIP
    # Why captions were left unassigned, with how many: {reason: count}.
    reasons: dict[str, int] = dataclass_field(default_factory=dict)


def _annotations_create(placed: Sequence[assignment.Placed], *, taxonomy_id: int) -> None:
    """Store the plan's annotations. Queues are read in (assigned_at, id) order: rows are
    written in queue-position order, each taking its assigned_at as it is written, so every
    annotator's queue follows the plan. On PostgreSQL one COPY; elsewhere one INSERT per
    ASSIGN_BATCH annotations."""
    if bulk.copy_supported():
        bulk.rows_copy(
            model=Annotation,
            fields=("caption_id", "annotator_id", "taxonomy_id", "queue_position", "exposure", "assigned_at"),
            rows=((p.caption, p.annotator, taxonomy_id, p.position, p.exposure, timezone.now()) for p in placed),
        )
        return
    Annotation.objects.bulk_create([
        Annotation(caption_id=p.caption, annotator_id=p.annotator, taxonomy_id=taxonomy_id,
                   queue_position=p.position, exposure=p.exposure)
        for p in placed
    ], batch_size=ASSIGN_BATCH)



@transaction.atomic
def annotations_assign(
    *,
    study: Study,
    annotators: Sequence,
    captions: Iterable[Caption] | None = None,
    overlap_share: float = 0.0,
    seed: int | None = None,
    design: str | None = None,
    gap: int | None = None,
    actor=None,
) -> AssignmentReport:
    """Give the captions to `annotators` under the study's assignment design.

    `design` and `gap` (the spread design's spacing), when given, become the study's; the
    order is drawn from `seed`, by default the study's own, so assigning again with the
    same inputs gives the same queues. A share `overlap_share` of the captions also goes
    to a second annotator, for agreement, under the same rules. Nobody gets a caption
    twice; what the design cannot place is counted in `skipped`, with the reasons.
    Each annotation stores its queue position and exposure (see annotation.rules.assignment).
    """
    study_require(study, Write.ASSIGN)
    if not annotators:
        raise ServiceError("Choose at least one annotator.")
    if not 0 <= overlap_share <= 1:
        raise ServiceError(f"The overlap share must be between 0 and 1, not {overlap_share}.")
    annotator_ids = set(
        Membership.objects.filter(
            study=study, role=Membership.Role.ANNOTATOR, user__in=[p.pk for p in annotators]
        ).values_list("user_id", flat=True)
    )
    for person in annotators:
        if person.pk not in annotator_ids:
            raise ServiceError(f"{person} is not an annotator in study {study.slug!r}.")
    if overlap_share and len(annotators) < 2:
        raise ServiceError("Overlap needs at least two annotators.")
    changed = {}
    if design is not None and design != study.assignment_design:
        changed["assignment_design"] = design
    if gap is not None and gap != study.spread_gap:
        changed["spread_gap"] = gap
    if changed:
        study_require_setup(study, changed)
    design = study.assignment_design if design is None else design
    gap = study.spread_gap if gap is None else gap
    seed = study.assignment_seed if seed is None else seed
    # The captions to place in one query, by clip name and model alias (the plan depends on
    # this order, not on ids). Chosen by a query, they are chosen by the database (a new
    # participant's few: annotation.services.recruitment); chosen as rows, they are picked
    # here from the study's, not sent as parameters.
    chosen = captions if isinstance(captions, QuerySet) else None
    wanted = None if captions is None or chosen is not None else {c.pk for c in captions}
    rows = Caption.objects.filter(clip__study=study, gold_item__isnull=True)  # gold is never work
    if chosen is not None:
        rows = rows.filter(pk__in=chosen.values("pk"))
    rows = rows.order_by("clip__name", "model__alias").values_list("pk", "clip_id", "model_id")
    items = [assignment.Item(pk, clip_id, model_id) for pk, clip_id, model_id in rows
             if wanted is None or pk in wanted]
    # A caption held only by people who withdrew is free again (annotation.services.withdrawal).
    holding = Annotation.objects.filter(caption__clip__study=study, purpose=Annotation.Purpose.WORK)
    if chosen is not None:
        holding = holding.filter(caption_id__in=chosen.values("pk"))
    taken = dict(
        holding_annotations(holding)
        .order_by()
        .values("caption_id")
        .annotate(n=Count("pk"))
        .values_list("caption_id", "n")
    )
    held: dict[int, list[assignment.Item]] = {person.pk: [] for person in annotators}
    for annotator_id, caption_id, clip_id, model_id in (
        Annotation.objects.filter(caption__clip__study=study, annotator__in=[a.pk for a in annotators],
                                  purpose=Annotation.Purpose.WORK)
        .order_by("assigned_at", "pk")  # the queue's order (annotation.selectors.queues)
        .values_list("annotator_id", "caption_id", "caption__clip_id", "caption__model_id")
    ):
        held[annotator_id].append(assignment.Item(caption_id, clip_id, model_id))
    try:
        plan = assignment.plan_assignment(
            items=items,
            annotators=[person.pk for person in annotators],
            design=design, seed=seed, overlap_share=overlap_share, gap=gap, held=held,
            taken=taken,
        )
    except assignment.DesignError as exc:
        raise ServiceError(str(exc)) from None
    if changed:
        Study.objects.filter(pk=study.pk).update(**changed)
        for name, value in changed.items():
            setattr(study, name, value)
    taxonomy = taxonomy_freeze(taxonomy=study.taxonomy)
    _annotations_create(sorted(plan.placed, key=lambda p: p.position), taxonomy_id=taxonomy.pk)
    reasons = dict(Counter(reason for _, reason in plan.unplaced))
    report = AssignmentReport(created=len(plan.placed), skipped=len(plan.unplaced), design=design,
                              reasons=reasons)
    if report.created or changed:
        AuditEvent.objects.create(
            study=study, actor=actor, action="assign",
            after={"created": report.created, "skipped": report.skipped, "overlap_share": overlap_share,
                   "design": design, "gap": gap, "seed": seed,
                   "annotators": [a.username for a in annotators]},
        )
    return report

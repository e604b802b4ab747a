"""Build a large study fast, row for row what the services would have written.

The workflow services act on one annotation at a time, which is right for people and far
too slow to set up a study of thousands of submitted annotations in a test. This builder
writes the same rows (clips, captions and windows, annotations with their annotator
pass, window corrections and audit events) with bulk_create. Tests that need *how* a row
is written use the services (tests.annotation.studybuild); tests that need *many* rows,
to show a query does not grow with them, use this.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.models import (
    Annotation,
    AuditEvent,
    CandidateModel,
    Caption,
    Clip,
    CorrectionPass,
    Membership,
    Study,
    Window,
    WindowCorrection,
)
from annotation.rules import workflow
from annotation.services.taxonomy import taxonomy_freeze

BATCH = 2000


@dataclass
class BuiltStudy:
    study: Study
    annotators: list = field(default_factory=list)
    reviewers: list = field(default_factory=list)
    captions: int = 0
    windows: int = 0
    annotations: int = 0


def people(study: Study, *, prefix: str, count: int, role: str) -> list:
    """`count` users holding `role` in `study`, named prefix1, prefix2, ..."""
    User = get_user_model()
    users = User.objects.bulk_create(
        [User(username=f"{prefix}{n}", password="!") for n in range(1, count + 1)], batch_size=BATCH
    )
    if not users or users[0].pk is None:  # backends without RETURNING on bulk insert
        users = list(User.objects.filter(username__in=[u.username for u in users]).order_by("pk"))
    Membership.objects.bulk_create(
        [Membership(study=study, user=user, role=role) for user in users], batch_size=BATCH
    )
    return users


@transaction.atomic
def build_study(
    study: Study,
    *,
    clips: int,
    models: int,
    windows: int,
    annotators: int = 4,
    reviewers: int = 1,
    double_share: float = 0.1,
    submitted_share: float = 1.0,
    seed: int = 0,
) -> BuiltStudy:
    """`clips` × `models` captions of `windows` windows each, every caption assigned to one
    annotator (round-robin) and `double_share` of them to a second; `submitted_share` of
    the annotations carry a complete annotator pass and are submitted, the rest are assigned.
    """
    rng = random.Random(seed)
    built = BuiltStudy(study=study)
    built.annotators = people(
        study, prefix=f"{study.slug}-annotator", count=annotators, role="annotator"
    )
    built.reviewers = people(
        study, prefix=f"{study.slug}-reviewer", count=reviewers, role="reviewer"
    )
    duration = float(windows * 2)
    clip_rows = Clip.objects.bulk_create(
        [
            Clip(
                study=study,
                name=f"clip{n:05d}",
                original=f"clips/original/clip{n:05d}.mp4",
                original_filename=f"clip{n:05d}.mp4",
                size_bytes=1,
                sha256=f"{n:064x}",
                duration=duration,
                fps=25.0,
                width=160,
                height=120,
                codec="h264",
            )
            for n in range(clips)
        ],
        batch_size=BATCH,
    )
    model_rows = CandidateModel.objects.bulk_create(
        [
            CandidateModel(study=study, name=f"model-{m}", alias=f"Model {m + 1:02d}")
            for m in range(models)
        ]
    )
    clip_rows = list(Clip.objects.filter(study=study).order_by("name"))
    model_rows = list(CandidateModel.objects.filter(study=study).order_by("alias"))
    Caption.objects.bulk_create(
        [
            Caption(
                clip=clip, model=model, overview=f"{model.alias} says clip {clip.name} shows a dog."
            )
            for clip in clip_rows
            for model in model_rows
        ],
        batch_size=BATCH,
    )
    captions = list(
        Caption.objects.filter(clip__study=study).order_by("clip__name", "model__alias")
    )
    Window.objects.bulk_create(
        [
            Window(
                caption=caption,
                index=i,
                start=2.0 * i,
                end=2.0 * i + 2,
                scene=f"Scene {i} of {caption.pk}.",
                shot="Static frame.",
            )
            for caption in captions
            for i in range(windows)
        ],
        batch_size=BATCH,
    )
    built.captions, built.windows = len(captions), len(captions) * windows
    taxonomy = taxonomy_freeze(taxonomy=study.taxonomy)
    now = timezone.now()
    doubled = set(rng.sample(range(len(captions)), round(double_share * len(captions))))
    rows = []
    turn = 0
    for position, caption in enumerate(captions):
        for copy in range(2 if position in doubled and annotators > 1 else 1):
            person = built.annotators[(turn + copy) % len(built.annotators)]
            submitted = rng.random() < submitted_share
            rows.append(
                Annotation(
                    caption=caption,
                    annotator=person,
                    taxonomy=taxonomy,
                    state=workflow.SUBMITTED if submitted else workflow.ASSIGNED,
                    version=6 if submitted else 1,
                    overview_locked_at=now if submitted else None,
                    started_at=now - timedelta(minutes=5) if submitted else None,
                    submitted_at=now - timedelta(seconds=len(rows)) if submitted else None,
                    active_seconds=rng.uniform(10, 300) if submitted else 0.0,
                    telemetry={"watched_share": rng.random()} if submitted else {},
                )
            )
        turn += 1
    Annotation.objects.bulk_create(rows, batch_size=BATCH)
    annotations = list(
        Annotation.objects.filter(caption__clip__study=study, state=workflow.SUBMITTED)
        .select_related("caption")
        .order_by("pk")
    )
    built.annotations = len(rows)
    passes = []
    for annotation in annotations:
        reject = rng.random() < 0.5
        passes.append(
            CorrectionPass(
                annotation=annotation,
                kind=CorrectionPass.Kind.ANNOTATOR,
                author_id=annotation.annotator_id,
                overview_verdict="reject" if reject else "accept",
                overview_text="A cat, not a dog." if reject else "",
                overview_modes=["factual"] if reject else [],
                segmentation_verdict="accept",
            )
        )
    CorrectionPass.objects.bulk_create(passes, batch_size=BATCH)
    pass_ids = dict(
        CorrectionPass.objects.filter(annotation__caption__clip__study=study).values_list(
            "annotation_id", "pk"
        )
    )
    window_rows = {}
    for caption_id, window_id, index, start, end, scene, shot in Window.objects.filter(
        caption__clip__study=study
    ).values_list("caption_id", "pk", "index", "start", "end", "scene", "shot"):
        window_rows.setdefault(caption_id, []).append((window_id, index, start, end, scene, shot))
    corrections = []
    for annotation in annotations:
        for window_id, _index, start, end, scene, shot in window_rows[annotation.caption_id]:
            reject = rng.random() < 0.2
            corrections.append(
                WindowCorrection(
                    correction_pass_id=pass_ids[annotation.pk],
                    window_id=window_id,
                    verdict="reject" if reject else "accept",
                    scene="Something else happens." if reject else scene,
                    shot=shot,
                    start=start,
                    end=end,
                    modes=["factual"] if reject else [],
                )
            )
    WindowCorrection.objects.bulk_create(corrections, batch_size=BATCH)
    AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                study=study,
                annotation=annotation,
                actor_id=annotation.annotator_id,
                action="submit",
                before={"state": workflow.IN_PROGRESS},
                after={"state": workflow.SUBMITTED},
            )
            for annotation in annotations
        ],
        batch_size=BATCH,
    )
    return built


def add_unassigned_captions(study: Study, *, models: int, clips: int) -> int:
    """Captions of `models` new models on the study's first `clips` clips, assigned to nobody."""
    existing = CandidateModel.objects.filter(study=study).count()
    CandidateModel.objects.bulk_create(
        [
            CandidateModel(study=study, name=f"late-model-{m}", alias=f"Model {m + 1:02d}")
            for m in range(existing, existing + models)
        ]
    )
    new_models = list(CandidateModel.objects.filter(study=study, name__startswith="late-model-"))
    clip_rows = list(Clip.objects.filter(study=study).order_by("name")[:clips])
    Caption.objects.bulk_create(
        [
            Caption(clip=clip, model=model, overview="Late caption.")
            for clip in clip_rows
            for model in new_models
        ],
        batch_size=BATCH,
    )
    return len(clip_rows) * len(new_models)

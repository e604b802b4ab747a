"""Build a study of any size for the scale benchmarks (not a benchmark itself).

Through the services where a lab would go through them: the study, its people, the
caption import (one JSONL file per model) and the assignment, each timed. Clip rows stand
in for videos (no request measured here touches media). Then a share of the annotations
is given a complete annotator pass and submitted in bulk, row for row what the workflow
services write (state, pass, window corrections, the stored review risk, the audit event):
driving thousands of annotations through five requests each would take hours, and what is
measured afterwards (start next, saves, submits, review) goes through the real services.
"""

from __future__ import annotations

import cProfile
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

BATCH = 2000
T = TypeVar("T")


@dataclass
class Built:
    study: object
    annotators: list = field(default_factory=list)
    reviewers: list = field(default_factory=list)
    admin: object = None
    captions: int = 0
    windows: int = 0
    annotations: int = 0
    submitted: int = 0
    timings: dict = field(default_factory=dict)


def caption_lines(clips: list[str], model: str, windows: int, duration: float) -> bytes:
    span = duration / windows
    lines = []
    for clip in clips:
        lines.append(
            json.dumps(
                {
                    "clip": clip,
                    "model": model,
                    "overview": f"{model} sees a person crossing a street in {clip} while traffic waits; "
                    "the camera follows from the pavement and stops at a bus shelter.",
                    "windows": [
                        {
                            "start": round(i * span, 3),
                            "end": round((i + 1) * span, 3),
                            "scene": f"Part {i + 1}: the person walks on past a shop window.",
                            "shot": "Medium shot, handheld, tracking left.",
                        }
                        for i in range(windows)
                    ],
                }
            )
        )
    return "\n".join(lines).encode()


def build(
    *,
    slug: str,
    clips: int,
    models: int,
    windows: int,
    annotators: int,
    reviewers: int,
    overlap: float,
    submitted_share: float,
    seed: int = 0,
    say=print,
    profiles: dict | None = None,
) -> Built:
    """The study, built and timed step by step; with `profiles` (a dict), each timed step is also
    profiled there under its name (cProfile)."""
    from django.contrib.auth import get_user_model

    from annotation.models import Clip
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.studies import membership_grant, study_create
    from annotation.services.workflow import annotations_assign

    User = get_user_model()
    study = study_create(slug=slug, name=f"scale bench {slug}")
    built = Built(study=study)
    started = time.perf_counter()
    users = User.objects.bulk_create(
        [User(username=f"{slug}-annotator-{n:02d}") for n in range(annotators)]
        + [User(username=f"{slug}-reviewer-{n:02d}") for n in range(reviewers)]
        + [User(username=f"{slug}-admin")]
    )
    built.annotators, built.reviewers, built.admin = (
        users[:annotators],
        users[annotators : annotators + reviewers],
        users[-1],
    )
    for person in built.annotators:
        membership_grant(study=study, user=person, role="annotator")
    for person in built.reviewers:
        membership_grant(study=study, user=person, role="reviewer")
    membership_grant(study=study, user=built.admin, role="admin")
    duration = 8.0 * windows
    names = [f"clip-{n:05d}" for n in range(clips)]
    Clip.objects.bulk_create(
        [
            Clip(
                study=study,
                name=name,
                original=f"bench/{name}.mp4",
                original_filename=f"{name}.mp4",
                size_bytes=1,
                sha256=f"{slug}-{name}".encode().hex()[:64].ljust(64, "0"),
                duration=duration,
                fps=25,
                width=640,
                height=360,
                codec="h264",
            )
            for name in names
        ],
        batch_size=BATCH,
    )
    built.timings["people and clips"] = time.perf_counter() - started

    files = [caption_lines(names, f"model-{m:02d}", windows, duration) for m in range(models)]

    def import_all() -> None:  # the files a lab uploads, one import each
        for m, data in enumerate(files):
            captions_import_jsonl(study=study, data=data)
            say(f"    imported model {m + 1}/{models}", end="\r", flush=True)
        say(" " * 40, end="\r")

    _step(built, "caption import", profiles, import_all)
    built.captions, built.windows = clips * models, clips * models * windows
    analyze()  # as autovacuum would have between an import and an assignment (it is off here)
    if built.annotators:  # none: the captions stay free (for recruitment links to give)
        report = _step(
            built,
            "assignment",
            profiles,
            lambda: annotations_assign(study=study, annotators=built.annotators, overlap_share=overlap, seed=seed),
        )
        built.annotations = report.created
    analyze()  # again: the annotation table was empty when last analyzed
    built.submitted = _step(
        built, "bulk submit", profiles, lambda: submit_in_bulk(study, share=submitted_share, seed=seed)
    )
    # And again: the statistics above count no item as submitted, so the review queue's partial
    # indexes looked empty to the planner (review next scanned every submitted item for an expired
    # claim, in a plan no analysed database would choose).
    analyze()
    return built


def _step(built: Built, name: str, profiles: dict | None, function: Callable[[], T]) -> T:
    """Run one step of the build, timed into built.timings (and profiled into `profiles`)."""
    profiler = cProfile.Profile() if profiles is not None else None
    started = time.perf_counter()
    result = profiler.runcall(function) if profiler else function()
    built.timings[name] = time.perf_counter() - started
    if profiler:
        profiles[name] = profiler
    return result


def submit_in_bulk(study, *, share: float, seed: int) -> int:
    """Give `share` of the study's assigned annotations a complete annotator pass and submit them."""
    if share <= 0:
        return 0
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import (
        Annotation,
        AuditEvent,
        Caption,
        CorrectionPass,
        Window,
        WindowCorrection,
    )
    from annotation.rules import risk
    from scoring.metrics.edits import EditSizing

    rng = random.Random(seed)
    rows = list(
        Annotation.objects.filter(caption__clip__study=study, state="assigned")
        .values_list("pk", "caption_id", "annotator_id")
        .order_by("pk")
    )
    chosen = [row for row in rows if rng.random() < share]
    windows: dict[int, list[tuple]] = {}
    for caption_id, window_id, scene, shot in (
        Window.objects.filter(caption__clip__study=study)
        .values_list("caption_id", "pk", "scene", "shot")
        .order_by("caption_id", "index")
    ):
        windows.setdefault(caption_id, []).append((window_id, scene, shot))
    overviews = dict(Caption.objects.filter(clip__study=study).values_list("pk", "overview"))
    now = timezone.now()
    sizing = EditSizing.of(study)  # the study's language and near-total cut, as the service measures
    chunk = 900 if connection.vendor == "sqlite" else 10000
    with transaction.atomic():
        for start in range(0, len(chosen), chunk):
            ids = [pk for pk, _, _ in chosen[start : start + chunk]]
            # Two steps, as the state machine (and its trigger) allows.
            Annotation.objects.filter(pk__in=ids).update(
                state="in_progress", started_at=now - timedelta(minutes=10), version=3
            )
            Annotation.objects.filter(pk__in=ids).update(
                state="submitted",
                overview_locked_at=now - timedelta(minutes=5),
                version=6,
                submitted_at=now - timedelta(minutes=5),
                active_seconds=120.0,
                telemetry={"watched_share": 0.9},
            )
        passes, corrections, risks, events = [], [], [], []
        for pk, caption_id, annotator_id in chosen:
            reject = rng.random() < 0.4
            text = "A person crosses a road; the camera stays on the pavement." if reject else ""
            passes.append(
                CorrectionPass(
                    annotation_id=pk,
                    kind="annotator",
                    author_id=annotator_id,
                    overview_verdict="reject" if reject else "accept",
                    overview_text=text,
                    overview_modes=["factual"] if reject else [],
                    segmentation_verdict="accept",
                )
            )
            judged = []
            for window_id, scene, shot in windows[caption_id]:
                bad = rng.random() < 0.15
                new_scene = "Someone else runs the other way." if bad else scene
                corrections.append(
                    (
                        pk,
                        WindowCorrection(
                            window_id=window_id,
                            verdict="reject" if bad else "accept",
                            scene=new_scene,
                            shot=shot,
                            start=0,
                            end=1,
                            modes=["factual"] if bad else [],
                        ),
                    )
                )
                judged.append(
                    risk.WindowJudgement("reject" if bad else "accept", f"{scene} {shot}", f"{new_scene} {shot}")
                )
            score, reasons = risk.review_risk(
                original_overview=overviews[caption_id],
                overview_verdict=passes[-1].overview_verdict,
                overview_text=text,
                windows=judged,
                active_seconds=120.0,
                telemetry={"watched_share": 0.9},
                disagreement=False,
                scale=16,
                sizing=sizing,
            )
            risks.append(Annotation(pk=pk, risk=score, risk_reasons=reasons))
            events.append(
                AuditEvent(
                    study=study,
                    annotation_id=pk,
                    actor_id=annotator_id,
                    action="submit",
                    before={"state": "in_progress"},
                    after={"state": "submitted"},
                )
            )
        CorrectionPass.objects.bulk_create(passes, batch_size=BATCH)
        pass_of = dict(
            CorrectionPass.objects.filter(annotation__caption__clip__study=study).values_list("annotation_id", "pk")
        )
        fixed = []
        times = dict(Window.objects.filter(caption__clip__study=study).values_list("pk", "start"))
        ends = dict(Window.objects.filter(caption__clip__study=study).values_list("pk", "end"))
        for pk, row in corrections:
            row.correction_pass_id = pass_of[pk]
            row.start, row.end = times[row.window_id], ends[row.window_id]
            fixed.append(row)
        WindowCorrection.objects.bulk_create(fixed, batch_size=BATCH)
        Annotation.objects.bulk_update(risks, ["risk", "risk_reasons"], batch_size=1000)
        AuditEvent.objects.bulk_create(events, batch_size=BATCH)
    return len(chosen)


def analyze() -> None:
    """Fresh planner statistics (autovacuum is off here): PostgreSQL ANALYZE, SQLite ANALYZE."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

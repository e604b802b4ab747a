"""A scripted annotate-and-review run of the demo study, through the services.

The annotator finds exactly the errors planted in ``annotation.demo_content`` (each rejected unit
corrected with the planted note, tagged with the planted mode; a planted segmentation error is
corrected by splitting every window at its middle). The reviewer approves, and amends every
``amend_every``-th annotation: a missed omission on an accepted overview, else a factual error
in the last window.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from annotation.demo_content import DEMO_CAPTIONS
from annotation.models import Annotation, Study
from annotation.services.workflow import review_amend, review_approve, review_claim
from tests.annotation.studybuild import complete

PLANTED = {(c["clip"], c["model"]): c["planted"] for c in DEMO_CAPTIONS}


def _annotator_pass(caption, planted):
    overview = {"verdict": "accept"}
    on_overview = [p for p in planted if p["unit"] == "overview"]
    if on_overview:
        notes = " ".join(f"Correction: {p['note']}." for p in on_overview)
        overview = {
            "verdict": "reject",
            "text": f"{caption.overview} {notes}",
            "modes": sorted({p["mode"] for p in on_overview}),
        }
    windows = []
    for window in caption.windows.order_by("index"):
        found = [p for p in planted if p["unit"] == "window" and p["index"] == window.index]
        if found:
            windows.append(
                {
                    "index": window.index,
                    "verdict": "reject",
                    "scene": f"{window.scene} ({found[0]['note']})",
                    "modes": sorted({p["mode"] for p in found}),
                }
            )
        else:
            windows.append({"index": window.index, "verdict": "accept"})
    segmentation = {"verdict": "accept"}
    if any(p["unit"] == "caption" for p in planted):
        timeline = []
        for window in caption.windows.order_by("index"):
            middle = round((window.start + window.end) / 2, 3)
            timeline += [
                {"start": window.start, "end": middle, "scene": window.scene, "shot": window.shot},
                {"start": middle, "end": window.end, "scene": window.scene, "shot": window.shot},
            ]
        segmentation = {"verdict": "reject", "modes": ["segmentation"], "windows": timeline}
    return overview, windows, segmentation


def annotate_and_review_demo(study: Study, *, amend_every: int = 4) -> int:
    """Annotate (each by its annotator) and review every assigned demo caption; return how many."""
    users = get_user_model().objects
    reviewer = users.get(username="reviewer")
    identifiers = dict(study.candidate_models.values_list("name", "identifier"))
    annotations = (
        Annotation.objects.filter(caption__clip__study=study)
        .select_related("caption__clip", "caption__model", "annotator")
        .order_by("caption__clip__name", "caption__model__name")
    )
    count = 0
    for number, annotation in enumerate(annotations, start=1):
        caption = annotation.caption
        planted = PLANTED[(caption.clip.name, identifiers[caption.model.name])]
        overview, windows, segmentation = _annotator_pass(caption, planted)
        complete(
            annotation, annotation.annotator, overview=overview, windows=windows,
            segmentation=segmentation,
        )
        review_claim(annotation_id=annotation.pk, actor=reviewer)
        if number % amend_every:
            review_approve(annotation_id=annotation.pk, actor=reviewer)
        elif overview["verdict"] == "accept":
            review_amend(
                annotation_id=annotation.pk,
                actor=reviewer,
                changes={
                    "overview": {
                        "verdict": "reject",
                        "text": f"{caption.overview} It also shows a grey strip.",
                        "modes": ["omission"],
                    }
                },
            )
        else:
            last = caption.windows.order_by("-index").first()
            review_amend(
                annotation_id=annotation.pk,
                actor=reviewer,
                changes={
                    "windows": [
                        {
                            "index": last.index,
                            "verdict": "reject",
                            "scene": f"Reviewer: {last.scene}",
                            "modes": ["factual"],
                        }
                    ]
                },
            )
        count += 1
    return count


def demo_reviewed() -> Study:
    """Build the demo study (clips rendered offline) and run the scripted annotate and review."""
    from annotation.services.demo import demo_build

    study = demo_build().study
    annotate_and_review_demo(study)
    return study

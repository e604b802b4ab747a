"""A small scripted study (stand-in clips, services-driven annotate and review) for the profile."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Caption
from annotation.services.workflow import (
    annotations_assign,
    review_amend,
    review_approve,
    review_claim,
)
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup

ACCEPT_ALL = [{"index": i, "verdict": "accept"} for i in range(3)]


def approve(annotation, reviewer, changes=None):
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    if changes is None:
        return review_approve(annotation_id=annotation.pk, actor=reviewer)
    return review_amend(annotation_id=annotation.pk, actor=reviewer, changes=changes)


@pytest.fixture
def scripted(study, personas):
    """Three clips, models Alpha and Bravo; five captions annotated and reviewed, one not.

    - c1/Alpha: overview rejected (factual), window 1 rejected (temporal); approved.
    - c1/Bravo: all accepted by the annotator; QC rejects window 2's shot (camera).
    - c2/Alpha: all accepted but the segmentation (rejected, split into 0-3 and 3-6 s).
    - c2/Bravo: overview rejected (factual) by the annotator, accepted by QC.
    - c3/Alpha: all accepted; c3/Bravo is never annotated (so c3 is not paired).
    """
    clips = {name: fake_clip(study, name) for name in ("c1", "c2", "c3")}
    clips["c1"].camera_platform, clips["c1"].scene_complexity = "handheld", "high"
    clips["c1"].save()
    clips["c2"].camera_platform, clips["c2"].manipulated = "tripod_static", True
    clips["c2"].save()
    captions_add(
        study, [caption_record(c, m) for c in ("c1", "c2", "c3") for m in ("Alpha", "Bravo")]
    )
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    with in_setup(study):
        annotations_assign(
            study=study,
            annotators=[annotator],
            captions=Caption.objects.filter(clip__study=study)
            .exclude(clip__name="c3", model__name="Bravo")
            .order_by("clip__name", "model__name"),
            design="clip_blocks",  # one annotator sees both models of a clip: a scripted pilot
        )

    def item(clip, model):
        return Annotation.objects.get(caption__clip__name=clip, caption__model__name=model)

    approve(complete(item("c1", "Alpha"), annotator), reviewer)
    complete(item("c1", "Bravo"), annotator, overview={"verdict": "accept"}, windows=ACCEPT_ALL)
    approve(
        item("c1", "Bravo"),
        reviewer,
        {
            "windows": [
                {"index": 2, "verdict": "reject", "shot": "Slow zoom in.", "modes": ["camera"]}
            ]
        },
    )
    complete(
        item("c2", "Alpha"),
        annotator,
        overview={"verdict": "accept"},
        windows=ACCEPT_ALL,
        segmentation={
            "verdict": "reject",
            "modes": ["segmentation"],
            "windows": [
                {"start": 0, "end": 3, "scene": "Bars & a <counter>.", "shot": "Static --> frame."},
                {
                    "start": 3,
                    "end": 6,
                    "scene": "The counter reaches five.",
                    "shot": "Static frame.",
                },
            ],
        },
    )
    approve(item("c2", "Alpha"), reviewer)
    approve(complete(item("c2", "Bravo"), annotator), reviewer, {"overview": {"verdict": "accept"}})
    complete(item("c3", "Alpha"), annotator, overview={"verdict": "accept"}, windows=ACCEPT_ALL)
    approve(item("c3", "Alpha"), reviewer)
    return study

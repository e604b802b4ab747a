"""The demo study: synthetic clips, three fictional models' captions, references, accounts.

Built offline and reproducibly from annotation.demo_content; running it again
adds only what is missing.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation import demo_content
from annotation.interchange import formats
from annotation.media import video as media
from annotation.models import AssignmentDesign, Membership, Study
from annotation.services.captions import (
    captions_import_jsonl,
    references_store,
    study_caption_pairs,
)
from annotation.services.clips import clip_import_file
from annotation.services.studies import (
    candidate_model_get_or_create,
    membership_grant,
    study_create,
)
from annotation.services.workflow import annotations_assign

DEMO_PASSWORD = "redline-demo"
DEMO_ANNOTATORS = ("annotator", "annotator2", "annotator3")
# username -> roles in the demo study; "admin" is also a site superuser.
DEMO_ACCOUNTS: dict[str, tuple[str, ...]] = {
    "admin": (Membership.Role.ADMIN, Membership.Role.RESEARCHER),
    "annotator": (Membership.Role.ANNOTATOR,),
    "annotator2": (Membership.Role.ANNOTATOR,),
    "annotator3": (Membership.Role.ANNOTATOR,),
    "reviewer": (Membership.Role.REVIEWER,),
    "researcher": (Membership.Role.RESEARCHER,),
}


@dataclass
class DemoReport:
    study: Study
    clips_added: int = 0
    captions_added: int = 0
    references_added: int = 0
    assigned: int = 0
    # (username, password or None when the account already existed, roles)
    accounts: list[tuple[str, str | None, tuple[str, ...]]] = field(default_factory=list)


def demo_accounts_ensure(*, study: Study) -> list[tuple[str, str | None, tuple[str, ...]]]:
    User = get_user_model()
    accounts = []
    for username, roles in DEMO_ACCOUNTS.items():
        user = User.objects.filter(username=username).first()
        password: str | None = None
        if user is None:
            password = DEMO_PASSWORD
            if username == "admin":
                user = User.objects.create_superuser(username, password=password)
            else:
                user = User.objects.create_user(username, password=password)
        for role in roles:
            membership_grant(study=study, user=user, role=role)
        accounts.append((username, password, roles))
    return accounts


def demo_build(*, progress: Callable[[str], None] = lambda message: None) -> DemoReport:
    study = Study.objects.filter(slug=demo_content.DEMO_STUDY_SLUG).first() or study_create(
        slug=demo_content.DEMO_STUDY_SLUG,
        name="Demo study",
        description=(
            "Six synthetic clips captioned by three fictional models, with planted errors of "
            "every failure mode. Assigned one model per clip: each of the three annotators sees "
            "one caption of every clip. Try it as annotator, reviewer or researcher."
        ),
    )
    report = DemoReport(study=study)
    report.accounts = demo_accounts_ensure(study=study)

    existing = set(study.clips.values_list("name", flat=True))
    with tempfile.TemporaryDirectory(prefix="redline-demo-") as folder:
        for spec in demo_content.DEMO_CLIPS:
            if spec["name"] in existing:
                continue
            progress(f"making clip {spec['name']} ({spec['kind']}, {spec['duration']:g} s)")
            path = Path(folder) / f"{spec['name']}.mp4"
            media.synthesize_clip(spec["kind"], path, duration=spec["duration"], **spec["params"])
            clip_import_file(
                study=study, path=path, properties=spec["properties"], manipulated=spec["manipulated"]
            )
            report.clips_added += 1

    names = {}
    for spec in demo_content.DEMO_MODELS:
        model = candidate_model_get_or_create(
            study=study,
            name=spec["name"],
            identifier=spec["identifier"],
            route=spec["route"],
            providers=spec["providers"],
        )
        names[spec["identifier"]] = model.name

    stored = study_caption_pairs(study)
    lines = [
        json.dumps(
            {
                "clip": caption["clip"],
                "model": names[caption["model"]],
                "overview": caption["overview"],
                "windows": caption["windows"],
                "meta": caption["meta"],
            }
        )
        for caption in demo_content.DEMO_CAPTIONS
        if (caption["clip"], names[caption["model"]]) not in stored
    ]
    if lines:
        progress(f"importing {len(lines)} captions")
        report.captions_added = captions_import_jsonl(study=study, data="\n".join(lines).encode()).stored

    records = [
        formats.ReferenceRecord(line=number, **reference)
        for number, reference in enumerate(demo_content.DEMO_REFERENCES, start=1)
    ]
    with transaction.atomic():
        report.references_added = references_store(study=study, records=records).stored
    # One model per clip: three models need three annotators for every caption to be
    # annotated once, and no annotator sees two models' captions of one clip.
    people = get_user_model().objects.filter(username__in=DEMO_ANNOTATORS).order_by("username")
    report.assigned = annotations_assign(
        study=study, annotators=list(people), design=AssignmentDesign.ONE_MODEL_PER_CLIP
    ).created
    return report

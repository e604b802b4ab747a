"""A study bundle of thousands of judged windows exports on SQLite too."""

from __future__ import annotations

import json
from datetime import UTC

import pytest

from annotation.services.bundles import bundle_export_bytes
from tests.annotation.bulkbuild import build_study

pytestmark = pytest.mark.django_db


def test_a_study_with_thousands_of_judged_windows_exports(study):
    built = build_study(study, clips=100, models=3, windows=6, annotators=3, double_share=0.2)
    bundle = json.loads(bundle_export_bytes(study=study))
    assert len(bundle["annotations"]) == built.annotations
    judged = sum(len(a["passes"]["annotator"]["windows"]) for a in bundle["annotations"])
    assert judged == built.annotations * 6


def test_timestamps_read_by_the_database_keep_the_bundle_format(study):
    """Export formats the many timestamps in SQL; whole seconds keep their six zeros, and a
    moment given in another time zone is written in UTC."""
    from datetime import datetime, timedelta, timezone

    from annotation.models import Annotation
    from annotation.services.bundles import bundle_export

    build_study(study, clips=2, models=1, windows=2, annotators=1, submitted_share=1.0)
    first, second = Annotation.objects.order_by("pk")[:2]
    whole = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    Annotation.objects.filter(pk=first.pk).update(assigned_at=whole)
    east = timezone(timedelta(hours=2))
    Annotation.objects.filter(pk=second.pk).update(assigned_at=datetime(2026, 3, 4, 7, 6, 7, 89, tzinfo=east))
    exported = {a["clip"]: a["assigned_at"] for a in bundle_export(study=study)["annotations"]}
    assert exported[first.caption.clip.name] == "2026-03-04T05:06:07.000000Z"
    assert exported[second.caption.clip.name] == "2026-03-04T05:06:07.000089Z"

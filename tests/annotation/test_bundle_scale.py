"""A study bundle of thousands of judged windows exports on SQLite too."""

from __future__ import annotations

import json

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

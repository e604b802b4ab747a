from io import StringIO

import pytest
from django.core.management import call_command

from annotation import demo_content
from annotation.models import Caption, Clip, Membership, Reference, Window

pytestmark = pytest.mark.django_db


def counts():
    return (Clip.objects.count(), Caption.objects.count(), Window.objects.count(),
            Reference.objects.count(), Membership.objects.count())


def test_make_demo_builds_the_study_and_running_it_again_changes_nothing(django_capture_on_commit_callbacks):
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("make_demo", stdout=out)
    assert "redline-demo" in out.getvalue()
    assigned = f"{len(demo_content.DEMO_CAPTIONS)} captions assigned, one model per clip to each of"
    assert f"{assigned} annotator, annotator2, annotator3" in out.getvalue()
    first = counts()
    assert first[:2] == (len(demo_content.DEMO_CLIPS), len(demo_content.DEMO_CAPTIONS))
    assert all(clip.poster for clip in Clip.objects.all())
    call_command("make_demo", stdout=StringIO())
    assert counts() == first


def test_demo_accounts_hold_the_four_roles(db):
    call_command("make_demo", stdout=StringIO())
    roles = set(Membership.objects.values_list("user__username", "role"))
    assert {("annotator", "annotator"), ("reviewer", "reviewer"), ("researcher", "researcher"),
            ("admin", "admin")} <= roles


def test_demo_captions_wait_in_the_annotators_queue(db):
    from annotation.models import Annotation

    call_command("make_demo", stdout=StringIO())
    # One model per clip: three annotators, each with one caption of every clip.
    rows = list(Annotation.objects.values_list("annotator__username", "caption__clip__name"))
    assert len(rows) == len(demo_content.DEMO_CAPTIONS)
    clips = {clip["name"] for clip in demo_content.DEMO_CLIPS}
    for username in ("annotator", "annotator2", "annotator3"):
        mine = [clip for person, clip in rows if person == username]
        assert sorted(mine) == sorted(clips)

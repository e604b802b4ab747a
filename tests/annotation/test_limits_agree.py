"""One limit for one thing, wherever it is checked: the return summary keeps to a comment's limit,
and a caption imports with no more windows than a draft may change."""

from __future__ import annotations

import json

import pytest

from annotation.api.workflow_bodies import MAX_WINDOWS, DraftChanges
from annotation.interchange.formats import parse_captions_jsonl
from annotation.models import Annotation, AuditEvent
from annotation.services.workflow import MAX_RETURN_COMMENT_CHARS, annotations_assign, review_claim, review_return
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db


def test_a_return_naming_five_units_with_the_longest_comments_keeps_its_summary_to_the_limit(
    study, personas
):
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    annotation = complete(Annotation.objects.get(), personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    units = ["overview", "window:0", "window:1", "window:2", "segmentation"]
    comment = "x" * MAX_RETURN_COMMENT_CHARS
    returned = review_return(annotation_id=annotation.pk, actor=personas["reviewer"],
                             units=[{"unit": unit, "comment": comment} for unit in units])
    assert len(returned.return_comment) <= MAX_RETURN_COMMENT_CHARS
    assert returned.return_comment.startswith("Overview: xxx") and returned.return_comment.endswith("…")
    # Every unit's own comment is kept whole.
    assert [item["comment"] for item in returned.returned_units] == [comment] * 5
    event = AuditEvent.objects.filter(action="return").get()
    assert len(event.after["comment"]) <= MAX_RETURN_COMMENT_CHARS


def timeline(count: int) -> list[dict]:
    return [{"start": n, "end": n + 1, "scene": "s", "shot": "t"} for n in range(count)]


def test_a_caption_with_more_windows_than_a_draft_may_change_is_refused_naming_the_limit():
    line = {"clip": "a", "model": "m", "overview": "o", "windows": timeline(MAX_WINDOWS + 1)}
    result = parse_captions_jsonl(json.dumps(line).encode(), clip_durations={"a": 20_000.0})
    assert not result.records
    [error] = result.errors
    assert (error.field, error.reason) == ("windows", "has 10,001 windows; a caption may have at "
                                                      "most 10,000")


def test_a_caption_with_as_many_windows_as_a_draft_may_change_imports():
    line = {"clip": "a", "model": "m", "overview": "o", "windows": timeline(MAX_WINDOWS)}
    result = parse_captions_jsonl(json.dumps(line).encode(), clip_durations={"a": 20_000.0})
    assert len(result.records) == 1 and not result.errors
    # ... and a draft may change every one of them, up to the last index.
    changes = DraftChanges(data={"windows": [{"index": n, "verdict": "accept"}
                                             for n in range(MAX_WINDOWS)]})
    assert changes.is_valid(), str(changes.errors)[:300]
    too_far = DraftChanges(data={"windows": [{"index": MAX_WINDOWS, "verdict": "accept"}]})
    assert not too_far.is_valid()

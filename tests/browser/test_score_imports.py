"""A study admin imports scores from elsewhere on the study page: a second import of the same
metric and source is refused until the replace box is ticked, and then says how many it replaced."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from scoring.models import ExternalScore
from tests.annotation.studybuild import caption_record, captions_add, fake_clip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def captioned(study):
    fake_clip(study, "k")
    captions_add(study, [caption_record("k", "A"), caption_record("k", "B")])
    return study


def scores(value: float) -> bytes:
    return "".join(json.dumps({"clip": "k", "model": model, "value": value}) + "\n"
                   for model in "AB").encode()


def import_scores(page, data: bytes, *, replace: bool = False) -> None:
    form = page.locator("#scores-import-form")
    form.get_by_label("score file").set_input_files(
        files=[{"name": "scores.jsonl", "mimeType": "application/jsonl", "buffer": data}])
    form.get_by_label("metric", exact=True).fill("vlm_defects")
    form.get_by_label("which way is better").select_option("lower")
    form.get_by_label("version", exact=True).fill("1")
    form.get_by_label("source", exact=True).fill("judge")
    form.get_by_label("replace the scores captions already have of this metric and source").set_checked(
        replace)
    form.get_by_role("button", name="Import").click()


def test_a_second_score_import_replaces_only_with_the_box_ticked(sign_in, live_server, personas,
                                                                captioned):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    import_scores(page, scores(1.0))
    expect(page.locator("#import-result")).to_have_text("Stored 2 score(s) of vlm_defects.")
    page.goto(f"{live_server.url}/studies/s1/")
    import_scores(page, scores(5.0))
    result = page.locator("#import-result")
    expect(result).to_contain_text("import with replace to replace it")
    expect(result).to_have_class("import-result error")
    assert sorted(ExternalScore.objects.values_list("value", flat=True)) == [1.0, 1.0]
    import_scores(page, scores(5.0), replace=True)
    expect(result).to_have_text("Stored 2 score(s) of vlm_defects, replacing 2.")
    assert sorted(ExternalScore.objects.values_list("value", flat=True)) == [5.0, 5.0]

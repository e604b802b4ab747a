"""A practice item in the workspace: submitted with the keyboard, its feedback shows beside the
work (verdicts against the gold ones, the modes missed, the redline to the gold correction) and
the attempt's result."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Qualification
from annotation.services import gold
from annotation.services.workflow import annotation_save, annotation_start_next, overview_lock
from tests.annotation.studybuild import complete
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_practice_item_shows_its_feedback_once_submitted(sign_in, live_server, caption, personas, study):
    admin, annotator = personas["admin"], personas["annotator"]
    item = gold.gold_start(study=study, actor=admin, caption_id=caption.pk)
    complete(item.gold, admin)  # the gold verdict rejects the overview (mode factual)
    gold.practice_configure(study=study, actor=admin, practice_items=[item.pk],
                            settings={"practice_min_items": 1, "requires_qualification": True})
    # The annotator's practice item, brought to its last step by the services: everything accepted.
    practice = Annotation.objects.get(pk=annotation_start_next(study=study, annotator=annotator))
    assert practice.purpose == "practice"
    practice = annotation_save(annotation_id=practice.pk, actor=annotator, base_version=practice.version,
                               changes={"overview": {"verdict": "accept"}})
    practice = overview_lock(annotation_id=practice.pk, actor=annotator, base_version=practice.version)
    annotation_save(annotation_id=practice.pk, actor=annotator, base_version=practice.version, changes={
        "windows": [{"index": i, "verdict": "accept"} for i in range(caption.windows.count())],
        "segmentation": {"verdict": "accept"}})

    page = sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/annotate/{practice.pk}/")
    page.wait_for_selector("#workspace[data-ready=true]")
    assert "Practice item." in page.locator("#practice-feedback").inner_text()
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#practice-redline")
    feedback = page.locator("#practice-feedback").inner_text()
    assert "Practice feedback" in feedback
    overview = page.locator("tr[data-unit=overview]").inner_text()
    assert "accept" in overview and "reject" in overview and "differs" in overview
    assert "factual (overview)" in page.locator("#practice-modes").inner_text()
    assert page.locator("#practice-redline del").count() + page.locator("#practice-redline ins").count() > 0
    assert page.locator("#practice-result").get_attribute("data-state") == "failed"
    assert "Overview verdicts agreed with the gold ones on 0 %" in page.locator("#practice-result").inner_text()
    screenshot(page, "practice-feedback")
    assert Qualification.objects.get(study=study, user=annotator).state == "failed"

"""An invited annotator's first visit to a study that asks for consent, in headless Chromium:
their queue sends them to the consent page; declining keeps them out (nothing stored); accepting
brings them back to the queue, from which the work opens."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import ConsentRecord
from annotation.services.captions import captions_import_jsonl
from annotation.services.consent import consent_save
from annotation.services.workflow import annotations_assign
from tests.browser.test_recruitment import caption
from tests.conftest import in_setup, jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_invited_annotator_accepts_the_consent_before_their_first_item(
    sign_in, live_server, study, personas, clips
):
    captions_import_jsonl(study=study, data=jsonl(caption("m1")))
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"]])
    consent_save(study=study, actor=personas["admin"], text="# Taking part\n\n**You may stop at any time.**\n")
    page = sign_in("annotator", "pw-annotator")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(f"{live_server.url}/studies/s1/queue/")
    page.wait_for_url(f"{live_server.url}/studies/s1/consent/?next=%2Fstudies%2Fs1%2Fqueue%2F")
    expect(page.locator("#consent-text strong")).to_have_text("You may stop at any time.")
    page.get_by_role("button", name="I decline").click()
    expect(page.locator("#consent-declined")).to_contain_text("Nothing was recorded")
    assert not ConsentRecord.objects.exists()

    page.goto(f"{live_server.url}/studies/s1/queue/")
    page.get_by_role("button", name="I accept").click()
    page.wait_for_url(f"{live_server.url}/studies/s1/queue/")
    assert list(ConsentRecord.objects.values_list("user__username", "number")) == [("annotator", 1)]
    page.keyboard.press("Enter")  # "Start next" has the focus
    page.wait_for_selector("#workspace[data-ready=true]")
    assert not errors

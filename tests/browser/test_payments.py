"""The Payments page in headless Chromium, as a study admin uses it: from the members page to
the participants' table with their platform ids, a rate typed in (a bad one refused in words),
the bonuses shown beside each participant and the bulk-bonus file downloaded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from annotation.models import Annotation, Participant
from annotation.services import recruitment
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PID = "5f2a9c8e1b3d4a6f7e8c9d01"


def test_the_admin_prices_the_bonuses_and_downloads_the_file(sign_in, live_server, study, personas):
    for clip in ("a", "b"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip) for clip in ("a", "b")])
    link, _ = recruitment.recruitment_link_create(study=study, actor=personas["admin"], cap=5, quota=1)
    participant = recruitment.participant_join(link=link, params={"PROLIFIC_PID": PID}).participant
    complete(Annotation.objects.get(annotator=participant.user), participant.user, active_seconds=540)
    recruitment.participant_complete(participant=participant)

    page = sign_in("admin", "pw-admin")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/studies/s1/members/")
    page.locator("#payments-link").click()
    row = page.locator(f"#payments tr[data-pseudonym='{participant.pseudonym}']")
    expect(row.locator("[data-key=participant_id]")).to_have_text(PID)
    expect(row.locator("[data-key=items_done]")).to_have_text("1 of 1")
    expect(row.locator("[data-key=active_seconds]")).to_have_text("9 min 00 s")

    rate = page.get_by_label("Rate per hour of active time (in the platform's currency)")
    rate.fill("-2")
    rate.press("Enter")
    expect(page.locator("#bonus-error")).to_have_text("The rate must be above 0; -2 is not.")
    page.get_by_label("Rate per hour of active time (in the platform's currency)").fill("10")
    page.get_by_role("button", name="Work out the bonuses").click()
    # 540 s at 10 an hour: 1.50.
    expect(page.locator("#bonus-summary")).to_contain_text("At 10.00 an hour: 1 bonus, 1.50 in all.")
    expect(row.locator("[data-key=amount]")).to_have_text("1.50")
    screenshot(page, "payments")
    with page.expect_download() as download:
        page.locator("#bonus-file").click()
    assert download.value.suggested_filename == "s1-bonus.csv"
    assert open(download.value.path(), encoding="utf-8").read() == f"{PID},1.50\n"
    assert errors == []


def test_the_members_page_lists_who_timed_out_apart_from_who_works(sign_in, live_server, study, personas):
    for clip in ("a", "b"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip) for clip in ("a", "b")])
    link, _ = recruitment.recruitment_link_create(study=study, actor=personas["admin"], cap=5, quota=1,
                                                  time_allowed=30)
    late = recruitment.participant_join(link=link, params={"PROLIFIC_PID": PID}).participant
    working = recruitment.participant_join(link=link, params={"PROLIFIC_PID": "6a0b1c2d3e4f5a6b7c8d9e0f"}).participant
    Participant.objects.filter(pk=late.pk).update(time_out_at=timezone.now() - timedelta(minutes=5))

    page = sign_in("admin", "pw-admin")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/studies/s1/members/")
    late_row = page.locator(f"#participants tr[data-participant='{late.pseudonym}']")
    expect(late_row).to_have_attribute("data-state", "timed out")
    expect(late_row.locator("td").last).to_contain_text("timed out ")  # then when, in the browser's format
    working_row = page.locator(f"#participants tr[data-participant='{working.pseudonym}']")
    expect(working_row).to_have_attribute("data-state", "working")
    expect(working_row.locator("td").last).to_contain_text("working (until ")
    assert not errors

"""A recruited participant withdraws, in headless Chromium: they join through a recruitment link,
do an item (approved by QC), follow "Withdraw from this study" from their queue, are refused
without the confirmation, then confirm with a hurried double click, which withdraws once; the
queue sends them back to the page that says so. The study admin's members page lists the
withdrawal by pseudonym with the excluded annotation, and the profile page says it is excluded."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent, Participant, Withdrawal
from annotation.services.captions import captions_import_jsonl
from annotation.services.recruitment import recruitment_link_create
from annotation.services.workflow import review_approve, review_claim
from tests.browser.conftest import screenshot
from tests.browser.test_recruitment import caption, do_the_item, new_page
from tests.conftest import jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PID = "7c1d2e3f4a5b6c7d8e9f0a1b"


def test_a_participant_withdraws_and_the_admin_sees_the_exclusion(sign_in, live_server, browser, study, personas,
                                                                     clips):
    # Two clips: the participant is given one caption of each (one model per clip), does one.
    captions_import_jsonl(study=study, data=jsonl(caption("m1"), {**caption("m1"), "clip": "b"}))
    _, token = recruitment_link_create(study=study, actor=personas["admin"], cap=5, quota=2)
    errors: list[str] = []

    context, page = new_page(browser)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/join/{token}/?PROLIFIC_PID={PID}")
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{live_server.url}/studies/s1/queue/")
    participant = Participant.objects.get()
    do_the_item(page)
    done = Annotation.objects.get(annotator=participant.user, state="submitted")
    review_claim(annotation_id=done.pk, actor=personas["reviewer"])
    review_approve(annotation_id=done.pk, actor=personas["reviewer"])

    # From the queue to the withdrawal page; without the confirmation nothing happens.
    page.goto(f"{live_server.url}/studies/s1/queue/")
    page.locator("#withdraw-link").click()
    page.wait_for_url(f"{live_server.url}/studies/s1/withdraw/")
    expect(page.locator("#withdraw")).to_contain_text("the items waiting for you go back")
    page.locator("#withdraw-confirm").evaluate("box => box.removeAttribute('required')")
    page.get_by_role("button", name="Withdraw").click()
    expect(page.locator("#withdraw-error")).to_contain_text("Tick the box to confirm")
    assert not Withdrawal.objects.exists()

    # Confirmed, with a hurried double click: one withdrawal.
    page.get_by_label("I want to withdraw from Study one").check()
    page.get_by_role("button", name="Withdraw").dblclick()
    expect(page.locator("#withdrawn")).to_contain_text("You withdrew from study Study one")
    expect(page.locator("#not-erased")).to_be_visible()
    screenshot(page, "withdrawal-done")
    assert Withdrawal.objects.count() == 1
    assert AuditEvent.objects.filter(action="participant_withdraw").count() == 1
    withdrawal = Withdrawal.objects.get()
    assert withdrawal.released == 1 and withdrawal.pseudonym == participant.pseudonym
    page.goto(f"{live_server.url}/studies/s1/queue/")
    page.wait_for_url(f"{live_server.url}/studies/s1/withdraw/")

    # The admin's members page and profile page show the exclusion.
    admin = sign_in("admin", "pw-admin")
    admin.on("pageerror", lambda error: errors.append(str(error)))
    admin.goto(f"{live_server.url}/studies/s1/members/")
    row = admin.locator("#withdrawals tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(participant.pseudonym)
    expect(row.locator("td").nth(3)).to_have_text("1")
    expect(row.locator("td").nth(4)).to_have_text("no")
    screenshot(admin, "members-withdrawals")
    admin.goto(f"{live_server.url}/studies/s1/profiles/")
    expect(admin.locator("#withdrawn-excluded")).to_contain_text("1 approved annotation of annotators who withdrew")
    assert not errors
    context.close()

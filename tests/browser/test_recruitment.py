"""A crowd participant's way through a recruitment link, in headless Chromium: the study admin
writes the study's consent text on the guidelines page and makes the link on the members page;
someone opens it, reads the consent and declines (nothing kept but the count); the participant
opens it with Prolific-style parameters, reads the consent and accepts (the version recorded),
the work done in the workspace, and the completion code shown before the platform's completion
URL opens; a second browser with the same id resumes the same participant (and, once done, sees
the code again, no new work); a newcomer after the cap is refused; the admin sees the
participant by pseudonym only."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent, ConsentRecord, Participant
from annotation.services.captions import captions_import_jsonl
from tests.browser.conftest import screenshot
from tests.conftest import jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PID = "5f2a9c8e1b3d4a6f7e8c9d01"
DECLINER = "7c1d2e3f4a5b6c7d8e9f0a1b"
CONSENT = ("# Taking part\n\nYou check captions of short videos. **You may stop at any time.**\n\n"
           "Your platform id is not stored. <b>Markup is shown as text.</b>\n")
CORRECTED = "A test card whose counter counts from zero to three."


def caption(model: str) -> dict:
    return {"clip": "a", "model": model, "overview": "A test card with a clock that counts up.",
            "windows": [{"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
                        {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."}]}


def prolific(url: str, pid: str) -> str:
    """The link as Prolific opens it: its placeholders filled in."""
    return (url.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%STUDY_ID%}}", "60a1b2c3d4e5f6a7b8c9d0e1")
            .replace("{{%SESSION_ID%}}", f"session-{pid[:6]}"))


def new_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    return context, context.new_page()


def do_the_item(page) -> None:
    """From the queue: start, reject the overview with a correction, accept both windows and the
    segmentation, submit."""
    page.keyboard.press("Enter")  # "Start next" has the focus
    page.wait_for_selector("#workspace[data-ready=true]")
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type(CORRECTED)
    page.keyboard.press("Alt+1")
    page.keyboard.press("Escape")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='1']")
    page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='2']")
    page.keyboard.press("a")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")


def test_a_prolific_participant_works_resumes_elsewhere_and_gets_the_code_and_the_cap_holds(
    sign_in, live_server, browser, study, personas, clips
):
    captions_import_jsonl(study=study, data=jsonl(caption("m1"), caption("m2")))
    admin = sign_in("admin", "pw-admin")
    errors: list[str] = []
    admin.on("pageerror", lambda error: errors.append(str(error)))

    # The study admin writes the consent text on the guidelines page (the study runs: version 1).
    admin.goto(f"{live_server.url}/studies/s1/guidelines/")
    admin.wait_for_selector("#consent-form[data-ready=true]")
    admin.get_by_label("Consent text (Markdown)").fill(CONSENT)
    admin.get_by_role("button", name="Save consent text").click()
    expect(admin.locator("#c-result")).to_have_text("Saved as version 1.")
    expect(admin.locator("#c-preview strong")).to_have_text("You may stop at any time.")
    expect(admin.locator("#c-preview")).to_contain_text("<b>Markup is shown as text.</b>")

    # The study admin makes the link on the members page.
    admin.goto(f"{live_server.url}/studies/s1/members/")
    form = admin.locator("#recruit-form")
    form.get_by_label("Label (for you)").fill("pilot on Prolific")
    form.get_by_label("Participants at most").fill("1")
    form.get_by_label("Items per participant").fill("1")
    form.get_by_label("Completion code (empty: one is made)").fill("REDLINE1")
    done_url = f"{live_server.url}/login/?cc=REDLINE1"  # stands in for Prolific's completion page
    form.get_by_label("Completion URL (optional)").fill(done_url)
    form.get_by_role("button", name="Create recruitment link").click()
    expect(admin.locator("#recruit-link")).to_be_visible()
    link = admin.locator("#recruit-url").input_value()
    assert re.fullmatch(rf"{live_server.url}/join/[A-Za-z0-9_-]{{43}}/\?PROLIFIC_PID=\{{\{{%PROLIFIC_PID%\}}\}}"
                        r"&STUDY_ID=\{\{%STUDY_ID%\}\}&SESSION_ID=\{\{%SESSION_ID%\}\}", link), link
    expect(admin.locator("#recruitment-links tbody tr")).to_have_count(1)
    expect(admin.locator("#recruitment-links tbody tr")).to_contain_text("0 of 1")

    # Someone opens it, reads the consent first and declines: a polite page, nothing kept.
    users = get_user_model().objects.count()
    decliner_context, decliner = new_page(browser)
    decliner.on("pageerror", lambda error: errors.append(str(error)))
    decliner.goto(prolific(link, DECLINER))
    expect(decliner.locator("#consent-text strong")).to_have_text("You may stop at any time.")
    decliner.get_by_role("button", name="I decline").click()
    expect(decliner.locator("#recruitment-declined")).to_contain_text("You declined")
    assert get_user_model().objects.count() == users
    assert not Participant.objects.exists() and not ConsentRecord.objects.exists()

    # The participant opens it from Prolific: the consent first, nothing made until they accept.
    first_context, first = new_page(browser)
    first.on("pageerror", lambda error: errors.append(str(error)))
    first.goto(prolific(link, PID))
    expect(first.locator("#consent-intro")).to_contain_text("1 caption of short videos")
    expect(first.locator("#consent-text h1")).to_have_text("Taking part")
    assert not Participant.objects.exists()
    screenshot(first, "recruitment-consent")
    first.get_by_role("button", name="I accept and take part").click()
    first.wait_for_url(f"{live_server.url}/studies/s1/queue/")
    participant = Participant.objects.get()
    assert Annotation.objects.filter(annotator=participant.user).count() == 1
    assert list(ConsentRecord.objects.values_list("user", "number")) == [(participant.user_id, 1)]

    # The same id in a second browser resumes the same participant, who does the work there.
    second_context, second = new_page(browser)
    second.on("pageerror", lambda error: errors.append(str(error)))
    second.goto(prolific(link, PID))
    expect(second.locator("#recruitment-welcome")).to_contain_text("Welcome back")
    second.get_by_role("button", name="Continue").click()
    second.wait_for_url(f"{live_server.url}/studies/s1/queue/")
    assert Participant.objects.count() == 1
    do_the_item(second)
    second.keyboard.press("Enter")  # "Start next": their part is done
    second.wait_for_url(f"{live_server.url}/studies/s1/done/")
    expect(second.locator("#completion-code")).to_have_text("REDLINE1")
    screenshot(second, "recruitment-done")
    second.wait_for_url(done_url, timeout=15_000)  # then back to the platform, with the code

    # The first browser finds the code too, and no new work.
    first.goto(f"{live_server.url}/studies/s1/queue/")
    first.wait_for_url(f"{live_server.url}/studies/s1/done/")
    expect(first.locator("#completion-code")).to_have_text("REDLINE1")
    first.goto(prolific(link, PID))
    first.get_by_role("button", name="Continue").click()
    first.wait_for_url(f"{live_server.url}/studies/s1/done/")
    assert Annotation.objects.filter(annotator=participant.user).count() == 1

    # A newcomer after the cap is refused, politely, and nothing is made.
    third_context, third = new_page(browser)
    third.goto(prolific(link, "6a3b0d9f2c4e5b7a8f9d0e12"))
    expect(third.locator("#recruitment-refused")).to_contain_text("all the participants it needs")
    expect(third.get_by_role("button", name="Start")).to_have_count(0)
    assert Participant.objects.count() == 1

    # The admin sees the participant by pseudonym, done; the platform id is nowhere.
    admin.reload()
    row = admin.locator(f"#participants tr[data-participant='{participant.pseudonym}']")
    expect(row).to_contain_text("1 of 1")
    screenshot(admin, "members-recruitment")
    expect(admin.locator("#recruitment-links tbody tr")).to_contain_text("1 of 1")
    expect(admin.locator("#recruitment-links tbody tr td").nth(3)).to_have_text("1")  # declined consent
    member = admin.locator(f"#members tr[data-member='{participant.user.username}'] .member-consent")
    expect(member).to_contain_text("version 1")
    assert PID not in admin.content() and DECLINER not in admin.content()
    participant.refresh_from_db()
    assert participant.completed_at is not None
    assert not any(PID in str(event.after) for event in AuditEvent.objects.all())
    assert not errors
    for context in (decliner_context, first_context, second_context, third_context):
        context.close()

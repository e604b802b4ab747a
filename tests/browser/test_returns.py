"""A return names units; those reopen for the annotator, who corrects them or replies.

Both sides through the pages: the reviewer ticks units and writes a comment for each, the
annotator meets a reopened overview (with the window pass kept), finds the other units
closed, is refused when resubmitting a returned unit unchanged without a reply, replies,
and the reviewer reads the reply beside the comment.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent
from annotation.services import workflow as flow
from tests.browser.test_workspace import annotator_pass, open_workspace, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CORRECTED = "A test card with a counter that counts up to five."


@pytest.fixture(autouse=True)
def no_scoring(settings):
    settings.SCORING_ON_FINAL_VERDICT = False


@pytest.fixture
def submitted(annotation, personas):
    """The annotator's pass of clip b: overview accepted, window 2 rejected, submitted."""
    annotator = personas["annotator"]

    def save(changes):
        current = Annotation.objects.get(pk=annotation.pk)
        flow.annotation_save(
            annotation_id=annotation.pk,
            actor=annotator,
            base_version=current.version,
            changes=changes,
        )

    save({"overview": {"verdict": "accept"}})
    flow.overview_lock(
        annotation_id=annotation.pk,
        actor=annotator,
        base_version=Annotation.objects.get(pk=annotation.pk).version,
    )
    save(
        {
            "windows": [
                {"index": 0, "verdict": "accept"},
                {
                    "index": 1,
                    "verdict": "reject",
                    "scene": "The counter runs.",
                    "modes": ["temporal"],
                },
                {"index": 2, "verdict": "accept"},
            ],
            "segmentation": {"verdict": "accept"},
        }
    )
    flow.annotation_submit(
        annotation_id=annotation.pk,
        actor=annotator,
        base_version=Annotation.objects.get(pk=annotation.pk).version,
    )
    return Annotation.objects.get(pk=annotation.pk)


def test_return_reopens_the_named_units_and_an_unchanged_one_needs_a_reply(
    browser, live_server, submitted, personas
):
    def signed_in(username):
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(f"pw-{username}")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/")
        return context, page

    reviewer_context, review = signed_in("reviewer")
    annotator_context, work = signed_in("annotator")
    errors = []
    for page in (review, work):
        page.on("pageerror", lambda error: errors.append(str(error)))

    # The reviewer returns the overview and window 1, each with its own comment, by keyboard.
    review.goto(f"{live_server.url}/review/{submitted.pk}/")
    review.wait_for_selector("body[data-ready='true']")
    review.locator("body").press("c")
    expect(review.locator("#claim")).to_contain_text("Claimed by you")
    review.locator("body").press("r")
    expect(review.get_by_label("Overview", exact=True)).to_be_focused()
    review.keyboard.press("Space")
    expect(review.get_by_label("What to fix in: Overview")).to_be_focused()
    review.keyboard.type("It counts to five: <b>say so</b>.")
    review.get_by_label("Window 1", exact=True).check()
    review.get_by_label("What to fix in: Window 1").fill("Is the first window really accepted?")
    review.keyboard.press("Control+Enter")
    expect(review.locator("#notice")).to_contain_text("Returned to the annotator")
    returned = Annotation.objects.get(pk=submitted.pk)
    assert returned.state == "returned" and returned.overview_locked_at is None
    assert [u["unit"] for u in returned.returned_units] == ["overview", "window:0"]

    # The annotator: the overview step is open again, the window pass is kept.
    open_workspace(work, live_server, returned)
    expect(work.locator("#workspace")).to_have_attribute("data-state", "overview")
    banner = work.locator("#returned-units")
    expect(banner).to_contain_text("It counts to five: <b>say so</b>.")  # text, not markup
    expect(banner).to_contain_text("Is the first window really accepted?")
    assert banner.locator("b").count() == 0
    work.locator("body").press("r")
    text = work.locator("#overview-text")
    text.fill(CORRECTED)
    work.locator("body").press("Escape")
    work.keyboard.press("2")  # a failure mode
    wait_saved(work)
    work.keyboard.press("Control+Enter")
    expect(work.locator("#workspace")).to_have_attribute("data-state", "windows")
    kept = annotator_pass(submitted).windows.get(window__index=1)
    assert kept.scene == "The counter runs."

    # Window 2 was not returned: it is closed, and the keyboard cannot change it.
    work.locator(".ws-chip[data-unit='1']").click()
    expect(work.locator("#unit")).to_contain_text("Not returned by QC")
    work.locator("body").press("a")
    expect(work.locator("#notice")).to_contain_text("QC did not return window 2")
    assert annotator_pass(submitted).windows.get(window__index=1).verdict == "reject"

    # Window 1 kept unchanged: submitting without a reply is refused, with a reply it goes.
    work.locator("body").press("Control+Enter")
    expect(work.locator("#notice")).to_contain_text("Window 1 was returned")
    assert Annotation.objects.get(pk=submitted.pk).state == "in_progress"
    reply = work.get_by_label("Your reply on window 1 (needed only if you keep it unchanged)")
    reply.fill("I disagree because nothing in window 1 is wrong.")
    reply.press("Control+Enter")
    work.wait_for_selector("#workspace[data-state=done]")
    done = Annotation.objects.get(pk=submitted.pk)
    assert done.state == "submitted"
    assert annotator_pass(done).overview_text == CORRECTED
    event = AuditEvent.objects.filter(annotation=done, action="submit").last()
    assert [(r["unit"], r["changed"]) for r in event.after["replies"]] == [
        ("overview", True),
        ("window:0", False),
    ]

    # The reviewer reads the reply beside the comment.
    review.reload()
    review.wait_for_selector("body[data-ready='true']")
    thread = review.locator("#return-thread .return-thread-unit[data-unit='window:0']")
    expect(thread.locator(".return-comment")).to_have_text("Is the first window really accepted?")
    expect(thread.locator(".return-reply")).to_have_text(
        "I disagree because nothing in window 1 is wrong."
    )
    assert errors == []
    reviewer_context.close()
    annotator_context.close()

"""Undo of the decisive keys in the browser: locking the overview, submitting, approving.

Each shows a notice with an Undo button; the test undoes each action, by keyboard (U,
Ctrl+Z) and by mouse, checks the database and the audit trail, that a reviewer does not see
a submission while it may be undone, and that a reload offers the undo again.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent
from annotation.selectors.queues import review_queue
from annotation.services.workflow import annotation_save, review_claim
from tests.browser.conftest import screenshot
from tests.browser.test_workspace import open_workspace, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_scoring(settings):
    settings.SCORING_ON_FINAL_VERDICT = False


def undone(annotation) -> list[str]:
    return [e.after["undone"] for e in AuditEvent.objects.filter(annotation=annotation, action="undo")]


def test_the_annotator_undoes_the_overview_lock_and_the_submission(
    sign_in, live_server, annotation, personas, study, settings
):
    settings.UNDO_SECONDS = 30
    annotation = annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                                 base_version=annotation.version, changes={"overview": {"verdict": "accept"}})
    page = sign_in("annotator", "pw-annotator")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_workspace(page, live_server, annotation)
    page.keyboard.press("?")
    expect(page.locator("#help")).to_contain_text("Undo locking the overview or submitting")
    page.keyboard.press("Escape")

    # Lock, then undo with U: the overview is open again, in the page and in the database.
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text("Overview verdict locked.")
    expect(toast).to_contain_text("s to undo")
    screenshot(page, "undo-lock")
    page.keyboard.press("u")
    page.wait_for_selector("#workspace[data-state=overview]")
    expect(toast).to_have_count(0)
    annotation.refresh_from_db()
    assert annotation.overview_locked_at is None
    assert undone(annotation) == ["lock_overview"]

    # Lock again and judge the windows and the segmentation; submit.
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    for unit in range(3):
        page.wait_for_selector(f"#unit[data-unit='{unit}']")
        page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='3']")
    page.keyboard.press("a")
    wait_saved(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    expect(toast).to_contain_text("Submitted to QC.")
    annotation.refresh_from_db()
    assert annotation.state == "submitted"
    # The reviewer does not see it while it may be undone.
    assert review_queue(study=study, reviewer=personas["reviewer"])["count"] == 0

    # A reload offers the undo again; Ctrl+Z takes the submission back.
    page.reload()
    page.wait_for_selector("#workspace[data-ready=true]")
    expect(toast).to_contain_text("Submitted to QC.")
    page.keyboard.press("Control+z")
    page.wait_for_selector("#workspace[data-state=windows]")
    annotation.refresh_from_db()
    assert annotation.state == "in_progress" and annotation.submitted_at is None
    assert undone(annotation) == ["lock_overview", "submit"]

    # Submitted once more and undone with the mouse.
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    page.get_by_role("button", name="Undo").click()
    page.wait_for_selector("#workspace[data-state=windows]")
    annotation.refresh_from_db()
    assert annotation.state == "in_progress"
    assert undone(annotation) == ["lock_overview", "submit", "submit"]
    assert not errors


def test_the_reviewer_undoes_an_approval_by_mouse_by_keyboard_and_after_a_reload(
    sign_in, live_server, annotation, personas, settings
):
    from tests.annotation.test_workflow import complete

    annotation = complete(annotation, personas["annotator"])  # UNDO_SECONDS is 0 here: it stands
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    settings.UNDO_SECONDS = 30
    page = sign_in("reviewer", "pw-reviewer")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/review/{annotation.pk}/")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator(".shortcuts")).to_contain_text("undo an approval")

    # Approve with A, undo with the mouse: back to the reviewer's claim.
    page.locator("body").press("a")
    expect(page.locator("#notice")).to_contain_text("Approved.")
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text("Approved.")
    screenshot(page, "undo-approve")
    toast.get_by_role("button", name="Undo").click()
    expect(page.locator("#notice")).to_contain_text("Undone: not approved")
    expect(page.locator("#claim")).to_contain_text("Claimed by you")
    annotation.refresh_from_db()
    assert annotation.state == "in_review" and annotation.reviewed_at is None

    # Approve again, undo with U.
    page.locator("body").press("a")
    expect(toast).to_contain_text("Approved.")
    page.locator("body").press("u")
    expect(page.locator("#notice")).to_contain_text("Undone: not approved")
    assert Annotation.objects.get(pk=annotation.pk).state == "in_review"

    # Approve, reload: the undo is offered for the seconds left, and works.
    page.locator("body").press("a")
    expect(toast).to_contain_text("Approved.")
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    expect(toast).to_contain_text("Approved.")
    page.keyboard.press("Control+z")
    expect(page.locator("#notice")).to_contain_text("Undone: not approved")
    assert Annotation.objects.get(pk=annotation.pk).state == "in_review"
    assert undone(annotation) == ["approve", "approve", "approve"]
    expect(page.locator("#history-list")).to_contain_text("reviewer: undid approve")
    assert not errors


def test_the_reviewer_undoes_an_amendment_and_the_qc_pass_is_gone(sign_in, live_server, annotation, personas, settings):
    from tests.annotation.test_workflow import complete

    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    settings.UNDO_SECONDS = 30
    page = sign_in("reviewer", "pw-reviewer")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/review/{annotation.pk}/")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator(".shortcuts")).to_contain_text("undo an approval or an amendment")

    for undo_by in ("mouse", "keyboard"):
        page.locator("body").press("e")
        page.get_by_label("QC overview text").fill("A test card; its counter counts up to five.")
        page.get_by_role("button", name="Save amendments and approve").click()
        expect(page.locator("#notice")).to_contain_text("Amended and approved")
        toast = page.locator("#undo-toast")
        expect(toast).to_contain_text("Amended and approved.")
        assert Annotation.objects.get(pk=annotation.pk).passes.filter(kind="qc").exists()
        if undo_by == "mouse":
            screenshot(page, "undo-amend")
            toast.get_by_role("button", name="Undo").click()
        else:
            page.locator("body").press("u")
        expect(page.locator("#notice")).to_contain_text("Undone: not amended")
        expect(page.locator("#claim")).to_contain_text("Claimed by you")
        page.wait_for_selector("body[data-ready='true']")
        expect(page.locator("#overview .unit-version.qc")).to_have_count(0)
        current = Annotation.objects.get(pk=annotation.pk)
        assert current.state == "in_review" and current.reviewed_at is None
        assert not current.passes.filter(kind="qc").exists()
    assert undone(annotation) == ["amend", "amend"]
    expect(page.locator("#history-list")).to_contain_text("reviewer: undid amend")
    # The Approve button approves the annotator's own pass now.
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#notice")).to_contain_text("Approved.")
    assert not Annotation.objects.get(pk=annotation.pk).passes.filter(kind="qc").exists()
    assert not errors

"""A QC reviewer works the review queue in the browser: approve, amend, return; and two race.

The annotator's side is driven through the services (the workspace page is built
elsewhere); every reviewer action goes through the page, by mouse or keyboard.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent
from annotation.services.captions import captions_import_jsonl
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    annotation_open,
    annotation_save,
    annotation_submit,
    annotations_assign,
    final_pass,
    overview_lock,
)
from tests.annotation.studybuild import worked
from tests.browser.conftest import screenshot
from tests.conftest import in_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
WINDOWS = [
    {"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
    {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."},
    {"start": 4, "end": 6, "scene": "The counter reaches five.", "shot": "Static frame."},
]
# Model names the reviewer must never see; the page shows "Model A", "Model B", "Model C".
SECRET_MODELS = ["acme-vlm-secret-7b", "acme-vlm-secret-13b", "acme-vlm-secret-72b"]


def submit(annotation, annotator, *, overview, windows, segmentation=None, active_seconds=180.0, watched=0.95):
    """The annotator's whole pass, through the services, ending in a submit."""
    annotation = annotation_open(annotation=annotation, actor=annotator)
    worked(annotation, active_seconds)
    annotation = annotation_save(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
        changes={"overview": overview, "active_seconds": active_seconds, "telemetry": {"watched_share": watched}},
    )
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = annotation_save(
        annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
        changes={"windows": windows, "segmentation": segmentation or {"verdict": "accept"}},
    )
    return annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)


@pytest.fixture(autouse=True)
def no_scoring(settings):
    """A final verdict queues scoring jobs; with eager tasks they would run inside the reviewer's
    request. Scoring has its own tests: here the review workflow is what is measured."""
    settings.SCORING_ON_FINAL_VERDICT = False


@pytest.fixture
def submitted(personas, clips, study):
    """Three submitted annotations of clip b, one per (secret) model, oldest first: C, B, A.

    A is a fast accept (the riskiest), B and C reject the overview and a window.
    C's original overview carries HTML that must render as text.
    """
    overviews = {
        SECRET_MODELS[0]: "A test card with a counter that counts up.",
        SECRET_MODELS[1]: "A test card with a clock that counts down.",
        SECRET_MODELS[2]: f"A test card with a counter. {PAYLOAD}",
    }
    captions_import_jsonl(study=study, data="\n".join(
        json.dumps({"clip": "b", "model": name, "overview": text, "windows": WINDOWS})
        for name, text in overviews.items()
    ).encode())
    annotator = personas["annotator"]
    with in_setup(study):
        annotations_assign(study=study, annotators=[annotator], design="clip_blocks")
    item = {
        alias: Annotation.objects.get(caption__model__alias=alias) for alias in ("Model A", "Model B", "Model C")
    }
    rejected_window = {"index": 1, "verdict": "reject", "scene": "The counter runs on.", "end": 3.5,
                       "modes": ["temporal"]}
    accepted = [{"index": 0, "verdict": "accept"}, {"index": 2, "verdict": "accept"}]
    submit(item["Model C"], annotator,
           overview={"verdict": "reject", "text": "A test card with a counter.", "modes": ["inference"]},
           windows=[rejected_window, *accepted])
    submit(item["Model B"], annotator,
           overview={"verdict": "reject", "text": "A test card with a counter that counts up.",
                     "modes": ["factual"]},
           windows=[rejected_window, *accepted])
    submit(item["Model A"], annotator, overview={"verdict": "accept"},
           windows=[{"index": i, "verdict": "accept"} for i in range(3)], active_seconds=8, watched=0.1)
    return {alias: Annotation.objects.get(pk=a.pk) for alias, a in item.items()}


@pytest.fixture
def second_reviewer(personas, study, make_user):
    person = make_user("reviewer2")
    membership_grant(study=study, user=person, role="reviewer")
    return person


def sign_in_context(browser, live_server, username: str):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/")
    return context, page


def queue_rows(page):
    page.wait_for_selector("body[data-loaded='true']")
    return page.locator("#queue tbody tr")


def claim_from_queue(page, live_server, annotation):
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.locator(f"#queue tr[data-id='{annotation.pk}'] button[data-claim]").click()
    page.wait_for_url(f"{live_server.url}/review/{annotation.pk}/")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator("#claim")).to_contain_text("Claimed by you")


def test_queue_puts_risky_items_first_or_oldest_first_and_filters(sign_in, live_server, submitted):
    page = sign_in("reviewer", "pw-reviewer")
    page.get_by_role("link", name="Study one").click()
    page.get_by_role("link", name="QC review queue").click()
    rows = queue_rows(page)
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Model A")
    expect(rows.first).to_contain_text("fast accept")
    screenshot(page, "review-queue")
    page.get_by_label("Order", exact=True).select_option("oldest")
    expect(page.locator("#summary")).to_contain_text("oldest first")
    expect(rows.nth(0)).to_contain_text("Model C")
    expect(rows.nth(2)).to_contain_text("Model A")
    page.get_by_label("Model", exact=True).select_option("Model B")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Model B")
    page.reload()
    expect(queue_rows(page)).to_have_count(1)  # the filters live in the address
    assert "acme-vlm" not in page.content()


def test_reviewer_approves_one_amends_another_and_returns_a_third_that_comes_back(
    sign_in, live_server, submitted, personas
):
    page = sign_in("reviewer", "pw-reviewer")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    # Approve A with the mouse: the annotator's pass is the final verdict.
    claim_from_queue(page, live_server, submitted["Model A"])
    expect(page.locator("#overview")).to_contain_text("accepted as written")
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#notice")).to_contain_text("Approved.")
    approved = Annotation.objects.get(pk=submitted["Model A"].pk)
    assert approved.state == "approved" and approved.reviewer == personas["reviewer"]
    assert final_pass(approved).kind == "annotator"

    # Amend B from the keyboard: the QC pass is stored beside the annotator's, with its edit size.
    claim_from_queue(page, live_server, submitted["Model B"])
    overview = page.locator("#overview")
    expect(overview.locator(".redline del").first).to_contain_text("clock")
    expect(overview.locator(".redline ins").first).to_contain_text("counter")
    expect(overview.locator(".mode-tag")).to_have_text(["Factual error"])
    expect(page.locator(".review-window[data-index='1'] .retime")).to_contain_text("2.00–3.50 s")
    page.locator(".review-window[data-index='1'] button.span").click()  # seeks the video to window 2
    expect(page.locator(".review-window.current")).to_have_attribute("data-index", "1")
    screenshot(page, "review-redline")
    page.locator("body").press("e")
    text = page.get_by_label("QC overview text")
    expect(text).to_be_focused()
    text.fill("A test card with a counter that counts up to five.")
    page.locator("#overview .amend-editor").get_by_label("Important omission").check()
    expect(page.locator("#overview .amend-editor .redline ins")).to_contain_text("to five.")
    scene = page.get_by_label("Window 2 scene (QC)")
    scene.fill("The counter keeps running past three.")
    expect(page.locator(".review-window[data-index='1'] .amend-editor .edit-size").first).to_contain_text(
        "4 words changed"
    )
    screenshot(page, "review-amend")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    expect(page.locator("#overview .unit-version.qc .redline ins")).to_contain_text("to five.")
    amended = Annotation.objects.get(pk=submitted["Model B"].pk)
    passes = {p.kind: p for p in amended.passes.all()}
    assert amended.state == "approved"
    assert passes["annotator"].overview_text == "A test card with a counter that counts up."
    assert passes["qc"].overview_text == "A test card with a counter that counts up to five."
    assert passes["qc"].overview_modes == ["factual", "omission"]
    assert passes["qc"].windows.get(window__index=1).scene == "The counter keeps running past three."
    assert final_pass(amended).kind == "qc"
    size = AuditEvent.objects.get(annotation=amended, action="amend").after["edit_size"]
    assert size["overview"]["words_changed"] == 3  # "up." -> "up to five." 
    assert [w["index"] for w in size["windows"]] == [1]
    expect(page.locator("#history .qc-edit-size")).to_contain_text("overview 3 words")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_hidden()
    screenshot(page, "review-amended")

    # Return C: a comment is required; the annotator revises and resubmits; then it is approved.
    claim_from_queue(page, live_server, submitted["Model C"])
    expect(page.locator("#overview .redline").first).to_contain_text(PAYLOAD)
    assert page.locator("#overview img").count() == 0
    assert page.evaluate("window.__pwned") is None
    page.get_by_role("button", name="Return to annotator").click()
    page.get_by_role("button", name="Send back to the annotator").click()
    expect(page.locator("#notice")).to_contain_text("Tick the units")
    page.get_by_label("Window 3", exact=True).check()
    page.get_by_role("button", name="Send back to the annotator").click()
    expect(page.locator("#notice")).to_contain_text("Window 3: say what to fix")
    assert Annotation.objects.get(pk=submitted["Model C"].pk).state == "in_review"
    page.get_by_label("What to fix in: Window 3").fill("The counter does not stop: say it counts to five.")
    page.get_by_role("button", name="Send back to the annotator").click()
    expect(page.locator("#notice")).to_contain_text("Returned to the annotator")
    returned = Annotation.objects.get(pk=submitted["Model C"].pk)
    assert (returned.state, returned.return_comment) == (
        "returned", "Window 3: The counter does not stop: say it counts to five.")
    assert [u["unit"] for u in returned.returned_units] == ["window:2"]

    annotator = personas["annotator"]
    revised = annotation_open(annotation=returned, actor=annotator)
    assert revised.state == "in_progress"
    revised = annotation_save(annotation_id=revised.pk, actor=annotator, base_version=revised.version, changes={
        "windows": [{"index": 2, "verdict": "reject", "scene": "The counter counts to five.", "modes": ["omission"]}],
    })
    annotation_submit(annotation_id=revised.pk, actor=annotator, base_version=revised.version)

    page.goto(f"{live_server.url}/studies/s1/review/")
    rows = queue_rows(page)
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Model C")
    claim_from_queue(page, live_server, submitted["Model C"])
    expect(page.locator("#history")).to_contain_text("The counter does not stop")
    expect(page.locator(".review-window[data-index='2'] .redline ins")).to_contain_text("counts to")
    page.locator("body").press("a")
    expect(page.locator("#notice")).to_contain_text("Approved.")
    assert Annotation.objects.get(pk=submitted["Model C"].pk).state == "approved"
    assert "acme-vlm" not in page.content()
    actions = list(AuditEvent.objects.filter(annotation_id=submitted["Model C"].pk).values_list("action", flat=True))
    assert actions[-6:] == ["return", "open", "save", "submit", "claim", "approve"]
    assert errors == []


def test_two_reviewers_racing_for_one_item_one_wins_the_other_is_told(
    browser, live_server, submitted, second_reviewer, personas
):
    item = submitted["Model B"]
    first_context, first = sign_in_context(browser, live_server, "reviewer")
    second_context, second = sign_in_context(browser, live_server, "reviewer2")
    try:
        for page in (first, second):
            page.goto(f"{live_server.url}/studies/s1/review/")
            queue_rows(page)
        first.locator(f"#queue tr[data-id='{item.pk}'] button[data-claim]").click()
        first.wait_for_url(f"{live_server.url}/review/{item.pk}/")
        second.locator(f"#queue tr[data-id='{item.pk}'] button[data-claim]").click()
        expect(second.locator("#notice")).to_contain_text("claimed by reviewer until")
        expect(second.locator(f"#queue tr[data-id='{item.pk}']")).to_contain_text("by reviewer until")
        screenshot(second, "review-race-lost")
        assert Annotation.objects.get(pk=item.pk).reviewer == personas["reviewer"]

        # The loser opening the item sees who holds it and cannot act on it.
        second.goto(f"{live_server.url}/review/{item.pk}/")
        expect(second.locator("#claim")).to_contain_text("Claimed by reviewer until")
        expect(second.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
        expect(second.get_by_role("button", name="Claim")).to_be_hidden()

        # The winner's claim runs out; the other takes the item over, and the first approve loses.
        Annotation.objects.filter(pk=item.pk).update(
            claim_expires_at=Annotation.objects.get(pk=item.pk).claim_expires_at.replace(year=2000)
        )
        second.reload()
        expect(second.locator("#claim")).to_contain_text("has expired")
        second.get_by_role("button", name="Claim").click()
        expect(second.locator("#claim")).to_contain_text("Claimed by you")
        first.get_by_role("button", name="Approve", exact=True).click()
        expect(first.locator("#notice")).to_contain_text("Not done")
        expect(first.locator("#claim")).to_contain_text("Claimed by reviewer2")
        expect(first.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
        current = Annotation.objects.get(pk=item.pk)
        assert (current.state, current.reviewer.username) == ("in_review", "reviewer2")
        second.get_by_role("button", name="Approve", exact=True).click()
        expect(second.locator("#notice")).to_contain_text("Approved.")
        assert Annotation.objects.get(pk=item.pk).state == "approved"
    finally:
        first_context.close()
        second_context.close()


def test_release_gives_the_item_back_to_the_queue(sign_in, live_server, submitted):
    page = sign_in("reviewer", "pw-reviewer")
    claim_from_queue(page, live_server, submitted["Model A"])
    page.get_by_role("button", name="Release").click()
    expect(page.locator("#notice")).to_contain_text("Released")
    expect(page.get_by_role("button", name="Claim")).to_be_visible()
    assert Annotation.objects.get(pk=submitted["Model A"].pk).state == "submitted"


def test_reviewer_amends_the_segmentation_by_merging_two_windows(sign_in, live_server, submitted):
    page = sign_in("reviewer", "pw-reviewer")
    claim_from_queue(page, live_server, submitted["Model A"])
    page.locator("body").press("e")
    expect(page.get_by_role("button", name="Save amendments and approve")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator(".amend-editor")).to_have_count(0)
    page.locator("body").press("e")
    editor = page.locator("#segmentation .amend-editor")
    editor.get_by_label("Reject").check()
    editor.get_by_label("Segmentation", exact=True).check()
    rows = editor.locator(".boundary-row")
    expect(rows).to_have_count(3)
    rows.nth(2).get_by_role("button", name="remove").click()
    rows.nth(1).get_by_label("end (s)").fill("6")
    rows.nth(1).get_by_label("scene").fill("The counter runs to five.")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    expect(page.locator("#timeline-corrected .segment")).to_have_count(2)
    expect(page.locator("#corrected-timeline-label")).to_have_text("Corrected segmentation (QC)")
    qc = Annotation.objects.get(pk=submitted["Model A"].pk).passes.get(kind="qc")
    assert (qc.segmentation_verdict, qc.segmentation_modes) == ("reject", ["segmentation"])
    assert [(w["start"], w["end"]) for w in qc.corrected_windows] == [(0, 2), (2, 6)]
    assert qc.corrected_windows[1]["scene"] == "The counter runs to five."
    screenshot(page, "review-segmentation-amended")


def test_impossible_qc_times_are_said_at_the_field_and_nothing_is_amended(sign_in, live_server, submitted):
    item = submitted["Model C"]
    page = sign_in("reviewer", "pw-reviewer")
    claim_from_queue(page, live_server, item)
    page.locator("body").press("e")
    window = page.locator(".review-window[data-index='1'] .amend-editor")
    window.get_by_label("Window 2 start (s)").fill("")  # an empty start once went out as 0 s
    expect(window.locator(".field-problem").first).to_contain_text("Type the start in seconds")
    editor = page.locator("#segmentation .amend-editor")
    editor.get_by_label("Reject").check()
    editor.get_by_label("Segmentation", exact=True).check()
    editor.locator(".boundary-row").nth(2).get_by_label("end (s)").fill("3")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Window 2: Type the start in seconds")
    expect(window.get_by_label("Window 2 start (s)")).to_be_focused()
    expect(editor.locator(".field-problem:visible")).to_have_text(
        "Corrected window 3: The end must come after the start (4.00 s).")

    window.get_by_label("Window 2 start (s)").fill("2.5")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Corrected window 3: The end must come after the start")
    assert Annotation.objects.get(pk=item.pk).state == "in_review"
    assert not Annotation.objects.get(pk=item.pk).passes.filter(kind="qc").exists()

    editor.locator(".boundary-row").nth(2).get_by_label("end (s)").fill("6")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    qc = Annotation.objects.get(pk=item.pk).passes.get(kind="qc")
    assert qc.windows.get(window__index=1).start == 2.5
    assert [(w["start"], w["end"]) for w in qc.corrected_windows] == [(0, 2), (2, 4), (4, 6)]


def test_amendments_survive_an_expired_claim_and_go_through_once_claimed_again(sign_in, live_server, submitted):
    item = submitted["Model B"]
    page = sign_in("reviewer", "pw-reviewer")
    claim_from_queue(page, live_server, item)
    page.get_by_role("button", name="Amend").click()
    page.get_by_label("QC overview text").fill("A test card whose counter counts up.")
    Annotation.objects.filter(pk=item.pk).update(
        claim_expires_at=Annotation.objects.get(pk=item.pk).claim_expires_at.replace(year=2000)
    )
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Claim it again to go on")
    expect(page.get_by_label("QC overview text")).to_have_value("A test card whose counter counts up.")
    page.get_by_role("button", name="Claim").click()
    expect(page.locator("#claim")).to_contain_text("Claimed by you")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    qc = Annotation.objects.get(pk=item.pk).passes.get(kind="qc")
    assert qc.overview_text == "A test card whose counter counts up."

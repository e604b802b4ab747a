"""QC goes from item to item: "Claim next", Next, "Approve and next", "Send back and next", in
the queue's order, to a "Queue empty" state; the return form is a panel beside the units; an
amendment is undone like an approval; the review page fits 1280×720 in each of its states.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent
from tests.browser.conftest import screenshot
from tests.browser.test_review import queue_rows, submitted  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 720}


@pytest.fixture(autouse=True)
def no_scoring(settings):
    settings.SCORING_ON_FINAL_VERDICT = False


def opened(page, live_server, annotation):
    page.wait_for_url(f"{live_server.url}/review/{annotation.pk}/**")
    page.wait_for_selector("body[data-ready='true']")
    expect(page.locator("#claim")).to_contain_text("Claimed by you")


def assert_fits(page, *selectors: str):
    """The page does not scroll, and each part named is inside the window."""
    height, width = page.evaluate("innerHeight"), page.evaluate("innerWidth")
    assert page.evaluate("document.documentElement.scrollHeight") <= height, "the page scrolls"
    assert page.evaluate("document.documentElement.scrollWidth") <= width, "the page scrolls sideways"
    for selector in selectors:
        box = page.locator(selector).bounding_box()
        assert box is not None, f"{selector} is not on the page"
        assert 0 <= box["y"] and box["y"] + box["height"] <= height + 0.5, f"{selector} is off screen: {box}"
        assert 0 <= box["x"] and box["x"] + box["width"] <= width + 0.5, f"{selector} is off screen: {box}"


def overlaps(a, b) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_reviewer_goes_through_the_queue_in_its_order_to_queue_empty(sign_in, live_server, submitted, settings):  # noqa: F811
    settings.UNDO_SECONDS = 30
    page = sign_in("reviewer", "pw-reviewer")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.get_by_label("Order", exact=True).select_option("oldest")
    expect(page.locator("#summary")).to_contain_text("oldest first")

    # Oldest first: C, then B, then A.
    page.get_by_role("button", name="Claim next").click()
    opened(page, live_server, submitted["Model C"])

    # Approve and next: C is approved, B opens, and C's approval can still be undone from B's page.
    page.get_by_role("button", name="Approve and next").click()
    opened(page, live_server, submitted["Model B"])
    assert Annotation.objects.get(pk=submitted["Model C"].pk).state == "approved"
    toast = page.locator("#undo-toast")
    expect(toast).to_contain_text("Approved: b.")
    # Undone from here: back to C, claimed by the reviewer again; B goes back to the queue.
    toast.get_by_role("button", name="Undo").click()
    opened(page, live_server, submitted["Model C"])
    assert Annotation.objects.get(pk=submitted["Model C"].pk).state == "in_review"
    assert Annotation.objects.get(pk=submitted["Model B"].pk).state == "submitted"

    # Shift+A approves and goes on.
    page.locator("body").press("Shift+A")
    opened(page, live_server, submitted["Model B"])
    assert Annotation.objects.get(pk=submitted["Model C"].pk).state == "approved"

    # Send back and next: B is returned, A opens.
    page.get_by_role("button", name="Return to annotator").click()
    page.get_by_label("Overview", exact=True).check()
    page.get_by_label("What to fix in: Overview").fill("Say that it counts up.")
    page.get_by_role("button", name="Send back and next").click()
    opened(page, live_server, submitted["Model A"])
    assert Annotation.objects.get(pk=submitted["Model B"].pk).state == "returned"

    # Nothing left: "Queue empty", and A's approval stands on its own page with its undo.
    page.get_by_role("button", name="Approve and next").click()
    expect(page.locator("#queue-empty")).to_be_visible()
    expect(page.locator("#queue-empty")).to_contain_text("Queue empty")
    expect(page.locator("#undo-toast")).to_contain_text("Approved.")
    assert Annotation.objects.get(pk=submitted["Model A"].pk).state == "approved"
    screenshot(page, "review-queue-empty")
    assert errors == []


def test_next_skips_an_undecided_item_back_to_the_queue(sign_in, live_server, submitted):  # noqa: F811
    page = sign_in("reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.get_by_role("button", name="Claim next").click()  # risky first: A
    opened(page, live_server, submitted["Model A"])
    page.locator("body").press("n")
    page.wait_for_url(lambda url: f"/review/{submitted['Model A'].pk}/" not in url)
    page.wait_for_selector("body[data-ready='true']")
    assert Annotation.objects.get(pk=submitted["Model A"].pk).state == "submitted"
    held = Annotation.objects.filter(state="in_review", reviewer__username="reviewer")
    assert held.count() == 1 and held.get().pk != submitted["Model A"].pk


def test_the_queue_page_says_when_the_queue_is_empty(sign_in, live_server, personas):
    page = sign_in("reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.get_by_role("button", name="Claim next").click()
    expect(page.locator("#notice")).to_contain_text("Queue empty")


def test_the_return_panel_sits_beside_the_units_and_the_page_fits_a_laptop(sign_in, live_server, submitted):  # noqa: F811
    item = submitted["Model B"]
    page = sign_in("reviewer", "pw-reviewer")
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.locator(f"#queue tr[data-id='{item.pk}'] button[data-claim]").click()
    opened(page, live_server, item)
    assert_fits(page, "#video", "#overview", "#approve-button", "#approve-next-button", "#amend-button",
                "#return-button", "#next-button")
    screenshot(page, "review-laptop")

    page.get_by_role("button", name="Return to annotator").click()
    panel = page.locator("#return-panel")
    expect(panel).to_be_visible()
    page.get_by_label("Window 2", exact=True).check()
    note = page.get_by_label("What to fix in: Window 2")
    expect(note).to_be_focused()
    unit = page.locator(".review-window[data-index='1']")
    expect(unit).to_have_class("review-window commented")
    assert_fits(page, "#return-panel", "#return-next", ".review-window[data-index='1']")
    # The unit commented on stays in view, beside the panel, not under it.
    assert not overlaps(panel.bounding_box(), unit.bounding_box())
    assert not overlaps(panel.bounding_box(), page.locator("#overview").bounding_box())
    screenshot(page, "review-laptop-return")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()

    page.locator("body").press("e")
    expect(page.get_by_role("button", name="Save amendments and approve")).to_be_visible()
    assert_fits(page, "#amend-save", "#overview .amend-editor")
    screenshot(page, "review-laptop-amend")


def test_the_two_similarities_of_an_amended_unit_say_which_texts_they_compare(
    sign_in, live_server, submitted  # noqa: F811
):
    item = submitted["Model B"]
    page = sign_in("reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/studies/s1/review/")
    queue_rows(page)
    page.locator(f"#queue tr[data-id='{item.pk}'] button[data-claim]").click()
    opened(page, live_server, item)
    page.locator("body").press("e")
    page.get_by_label("QC overview text").fill("A test card with a counter that counts up to five.")
    page.get_by_label("Window 2 scene (QC)").fill("The counter keeps running past three.")
    page.get_by_role("button", name="Save amendments and approve").click()
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    page.wait_for_selector("body[data-ready='true']")
    sizes = page.locator("#overview .edit-size")
    expect(sizes).to_have_count(2)
    expect(sizes.nth(0)).to_contain_text("character similarity, original → annotator:")
    expect(sizes.nth(1)).to_contain_text("character similarity, annotator → QC:")
    expect(page.locator("#history .qc-edit-size")).to_contain_text("QC edit size, annotator → QC: overview 3 words")
    # A window's size in the history measures its scene and shot as one text, and says so.
    expect(page.locator("#history .qc-edit-size")).to_contain_text("window 2, scene and shot together, 4 words")
    window = page.locator(".review-window[data-index='1'] .unit-version.qc .edit-size")
    expect(window.first).to_contain_text("character similarity, annotator → QC:")
    assert AuditEvent.objects.filter(annotation=item, action="amend").count() == 1

"""Guidelines in the browser: the study admin writes them with a failure-mode example on the
setup page; the annotator opens them beside the item with the G key, sees the example, and after
the admin's edit is told "guidelines updated" with what changed; the QC reviewer opens them on
the review page with the same key. Markup written into them stays inert."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import GuidelineVersion
from annotation.services.guidelines import guidelines_save
from tests.annotation.studybuild import complete
from tests.browser.conftest import screenshot
from tests.browser.test_workspace import open_workspace
from tests.browser.test_workspace_fit import LAPTOP, assert_fits

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = ("# How to judge\n\nReject a caption that names a wrong colour.\n\n"
        "<script>window.pwned = 1</script> <img src=x onerror=\"window.pwned = 2\">\n")


def test_admin_writes_guidelines_with_an_example_and_the_annotator_reads_them_and_their_update(
    sign_in, live_server, annotation, browser
):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/guidelines/")
    page.wait_for_selector("#guidelines-form[data-ready=true]")
    page.get_by_label("Guidelines (Markdown)").fill(TEXT)
    page.get_by_role("button", name="Add an example").click()
    page.get_by_label("Failure mode", exact=True).select_option(label="Camera / shot")
    page.get_by_label("Caption excerpt").fill("The camera pans left.")
    page.get_by_label("Correction", exact=True).fill("The camera stays still.")
    page.get_by_label("Why this mode").fill("A tripod shot: the frame never moves.")
    page.get_by_role("button", name="Save guidelines").click()
    expect(page.locator("#g-result")).to_contain_text("Saved as version 1.")
    expect(page.locator("#g-preview h1")).to_have_text("How to judge")
    expect(page.locator("#g-preview")).to_contain_text("<script>window.pwned = 1</script>")  # shown, not run
    expect(page.locator("#g-preview .g-excerpt")).to_have_text("The camera pans left.")
    assert page.locator("#g-preview script, #g-preview img").count() == 0
    screenshot(page, "guidelines-setup")
    version = GuidelineVersion.objects.get(study__slug="s1")
    assert version.text == TEXT and version.examples[0]["mode"] == "camera"

    # Too long: refused at the field, nothing stored.
    page.get_by_label("Guidelines (Markdown)").fill("x" * 100_001)
    page.get_by_role("button", name="Save guidelines").click()
    expect(page.locator("#e-text")).to_contain_text("the limit is 100,000 bytes")
    assert GuidelineVersion.objects.filter(study__slug="s1").count() == 1

    page = sign_in("annotator", "pw-annotator")
    page.set_viewport_size(LAPTOP)
    open_workspace(page, live_server, annotation)
    notice = page.locator("#guidelines-notice")
    expect(notice).to_contain_text("This study has guidelines")
    panel = page.locator("#guidelines-panel")
    expect(panel).to_be_hidden()
    page.keyboard.press("g")
    expect(panel).to_be_visible()
    expect(panel.locator("h1")).to_have_text("How to judge")
    expect(panel.locator(".g-excerpt")).to_have_text("The camera pans left.")
    expect(panel.locator(".g-correction")).to_have_text("The camera stays still.")
    expect(panel).to_contain_text("A tripod shot")
    assert page.evaluate("window.pwned") is None
    screenshot(page, "guidelines-workspace-panel")
    page.keyboard.press("g")
    expect(panel).to_be_hidden()
    assert page.locator("#workspace").get_attribute("data-state") == "overview"  # still on the item
    page.get_by_role("button", name="I have read them").click()
    expect(notice).to_have_count(0)
    assert_fits(page, "#panel")

    # The admin edits them on the setup page (their own browser) while the study runs: version 2.
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    admin = context.new_page()
    admin.goto(f"{live_server.url}/login/")
    admin.get_by_label("Username").fill("admin")
    admin.get_by_label("Password").fill("pw-admin")
    admin.keyboard.press("Enter")
    admin.wait_for_url(f"{live_server.url}/")
    admin.goto(f"{live_server.url}/studies/s1/guidelines/")
    admin.wait_for_selector("#guidelines-form[data-ready=true]")
    admin.get_by_label("Guidelines (Markdown)").fill(TEXT.replace("a wrong colour", "a wrong colour or count"))
    admin.get_by_role("button", name="Save guidelines").click()
    expect(admin.locator("#g-result")).to_contain_text("Saved as version 2.")
    expect(admin.locator("#g-versions tbody tr")).to_have_count(2)
    context.close()
    page.reload()
    page.wait_for_selector("#workspace[data-ready=true]")
    expect(notice).to_contain_text("Guidelines updated: version 1 → 2")
    page.get_by_text("What changed").click()
    expect(page.locator("#guidelines-diff ins")).to_have_text(["or count"])
    screenshot(page, "guidelines-updated-notice")
    page.get_by_role("button", name="Dismiss").click()
    expect(notice).to_have_count(0)
    page.reload()
    page.wait_for_selector("#workspace[data-ready=true]")
    expect(page.locator("#guidelines-notice")).to_have_count(0)


def test_the_qc_reviewer_opens_the_guidelines_beside_the_review_with_the_key(
    sign_in, live_server, annotation, personas
):
    example = {"mode": "factual", "excerpt": "A red car.", "correction": "A blue car.", "why": "Colour."}
    guidelines_save(study=annotation.caption.clip.study, actor=personas["admin"], text="Approve only whole verdicts.",
                    examples=[example])
    complete(annotation, personas["annotator"])
    page = sign_in("reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/review/{annotation.pk}/")
    panel = page.locator("#guidelines-panel")
    expect(panel).to_be_hidden()
    page.locator("#review-body").focus()
    page.keyboard.press("g")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Approve only whole verdicts.")
    expect(panel.locator(".g-excerpt")).to_have_text("A red car.")
    screenshot(page, "guidelines-review-panel")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    page.get_by_role("button", name="Guidelines G").click()
    expect(panel).to_be_visible()

"""A researcher builds the demo study's failure profile in the browser and opens the report.

The demo study is annotated and reviewed through the services first (the scripted run of
tests/profiles/demo_run.py); everything after that goes through the page, like a person.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS
from tests.browser.conftest import screenshot, wait_until
from tests.profiles.demo_run import demo_reviewed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALL_IMAGES_LOADED = """() => {
  const images = [...document.images];
  return images.length > 0 && images.every((img) => img.complete && img.naturalWidth > 0);
}"""


@pytest.fixture(autouse=True)
def no_scoring(settings):
    """Each final verdict would queue a scoring job, run eagerly inside the scripted review;
    scoring has its own tests."""
    settings.SCORING_ON_FINAL_VERDICT = False


@pytest.fixture
def demo():
    return demo_reviewed()


def test_a_researcher_builds_the_profile_and_the_report_opens_with_its_figures(
    sign_in, live_server, demo
):
    page = sign_in("researcher", "redline-demo")
    page.get_by_role("link", name="Demo study").click()
    page.get_by_role("link", name="Failure profile").click()
    page.wait_for_selector("#profile-form[data-ready=true]")
    page.get_by_label("Bootstrap resamples").fill("200")
    page.get_by_label("Adjusted-model resamples").fill("40")
    page.get_by_role("button", name="Build profile").click()
    expect(page.locator("#profile-step")).to_have_text("Done.", timeout=120_000)

    expect(page.locator("#profile-main-table tbody tr")).to_have_count(3)
    expect(page.locator("#profile-exposure-caption")).to_contain_text("rejection rate by exposure")
    # The demo is assigned one model per clip: nobody met a second caption of a clip.
    expect(page.locator("#profile-exposure [data-not-computable]")).to_contain_text(
        "not computable: needs later exposures")
    expect(page.locator("#profile-figures figure")).to_have_count(len(FIGURES))
    page.locator("#profile-figures img").last.scroll_into_view_if_needed()
    wait_until(page, ALL_IMAGES_LOADED)
    screenshot(page, "profile-page")

    with page.expect_popup() as opened:
        page.get_by_role("link", name="Open report.html").click()
    report = opened.value
    report.wait_for_load_state()
    expect(report.locator("h1")).to_have_text("Failure profile: Demo study")
    assert report.locator("figure img").count() == len(FIGURES)
    wait_until(report, ALL_IMAGES_LOADED)
    widths = report.eval_on_selector_all(
        "figure img", "images => images.map((img) => img.naturalWidth)"
    )
    assert all(width > 0 for width in widths)
    assert report.locator("section[data-table] table").count() == len(TABLE_CAPTIONS)
    assert report.locator("section[data-table=rejection_by_exposure]").count() == 1
    screenshot(report, "profile-report")


def test_the_report_opens_from_the_downloaded_file(sign_in, live_server, demo, page, tmp_path):
    page = sign_in("admin", "redline-demo")
    page.goto(f"{live_server.url}/studies/demo/profiles/")
    page.get_by_label("Bootstrap resamples").fill("100")
    page.get_by_label("Adjusted-model resamples").fill("20")
    page.get_by_role("button", name="Build profile").click()
    expect(page.locator("#profile-step")).to_have_text("Done.", timeout=120_000)
    page.locator("details summary").click()
    with page.expect_download() as downloaded:
        page.get_by_role("link", name="report.html", exact=True).click()
    path = tmp_path / "report.html"
    downloaded.value.save_as(path)
    page.goto(path.as_uri())
    wait_until(page, ALL_IMAGES_LOADED)
    assert page.locator("figure img").count() == len(FIGURES)

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


def test_a_researcher_deletes_exports_from_the_page_after_confirming(sign_in, live_server, study, personas):
    from scoring import profile_jobs
    from tests.profiles.fake_exports import an_export

    oldest = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    failed = an_export(study, state="failed", created_at="2026-01-02T00:00:00+00:00")
    newest = an_export(study, state="done", created_at="2026-01-03T00:00:00+00:00")
    page = sign_in("researcher", "pw-researcher")
    page.goto(f"{live_server.url}/studies/{study.slug}/profiles/")
    page.wait_for_selector("#profile-form[data-ready=true]")
    earlier = page.locator("#profile-earlier li")
    expect(earlier).to_have_count(2)

    # Dismissed: nothing is deleted.
    page.once("dialog", lambda dialog: dialog.dismiss())
    earlier.filter(has_text="failed").get_by_role("button", name="Delete").click()
    expect(earlier).to_have_count(2)
    assert profile_jobs.job_dir(study, failed).is_dir()

    # Confirmed: the entry and its folder go.
    messages = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    earlier.filter(has_text="failed").get_by_role("button", name="Delete").click()
    expect(earlier).to_have_count(1)
    assert "deleted for good" in messages[0]
    # The answer came once the transaction committed, which removed the files.
    assert not profile_jobs.job_dir(study, failed).exists()

    # The export the page shows: after deleting it, the page shows the one before it.
    expect(page.locator("#profile-made")).to_contain_text("30 resamples")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete this export").click()
    expect(page.locator("#profile-earlier-section")).to_have_count(0)
    assert [s["job"] for s in profile_jobs.profile_jobs(study=study)] == [oldest]
    assert not profile_jobs.job_dir(study, newest).exists()
    expect(page.get_by_role("button", name="Delete this export")).to_be_visible()

    # A running export offers no Delete button.
    an_export(study, state="running", created_at="2026-01-04T00:00:00+00:00")
    page.reload()
    page.wait_for_selector("#profile-form[data-ready=true]")
    expect(page.locator("#profile-step")).to_contain_text("Working")
    expect(page.get_by_role("button", name="Delete this export")).to_be_hidden()
    expect(page.locator(f'#profile-earlier li[data-export="{oldest}"]')).to_have_count(1)

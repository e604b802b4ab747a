"""The annotator quality page and the work log in the browser: the study page warns of an
annotator's gold drift and leads to the quality table, which sorts by a column; the work log
filters by person and by clip; a researcher sees pseudonyms. Screenshots in artifacts/screenshots."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.rules.pseudonyms import pseudonym
from tests.annotation.test_annotator_quality import gold_world, world  # noqa: F401 - fixtures
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_quality_page_and_work_log(sign_in, live_server, gold_world, page):  # noqa: F811
    sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    drift = page.locator("#gold-drift")
    expect(drift).to_contain_text("annotator: 60% of the last 5 gold checks")

    page.locator("#quality-link").click()
    table = page.locator("#annotator-quality")
    expect(table.locator("tbody tr")).to_have_count(2)
    mine = table.locator('tr[data-person="annotator"]')
    expect(mine.locator('td[data-key="items_done"]')).to_have_text("6")
    expect(mine.locator('td[data-key="gold_checks"]')).to_have_text("5")
    expect(mine.locator('td[data-key="practice"]')).to_have_text("passed")
    expect(mine.locator('td[data-key="gold_overview_kappa"]')).to_have_text("0.167")
    expect(mine.locator('td[data-key="recent_gold_accuracy"]')).to_have_text("60%")
    expect(mine.locator('td[data-key="return_rate"]')).to_have_text("20%")
    # Sorting by the items done, most first, then back: the heading says the order.
    heading = table.locator('th[data-key="return_rate"]')
    heading.locator("a").click()
    expect(heading).to_have_attribute("aria-sort", "ascending")
    heading.locator("a").click()
    expect(heading).to_have_attribute("aria-sort", "descending")
    expect(table.locator("tbody tr").first).to_have_attribute("data-person", "annotator")
    screenshot(page, "annotator-quality")

    page.locator("#work-log-link").click()
    log = page.locator("#work-log")
    # Newest first: annotator's last gold check (marked so for the admin).
    expect(log.locator("tbody tr").first).to_have_attribute("data-action", "submit")
    expect(log.locator("tbody tr").first).to_contain_text("g4")
    expect(log.locator("tbody tr").first).to_contain_text("gold check")
    page.locator("#filter-person").select_option("reviewer")
    page.locator("#work-log-filters button").click()
    expect(log.locator("tbody tr")).to_have_count(13)
    for cell in log.locator("tbody tr td:nth-child(2)").all_inner_texts():
        assert cell == "reviewer"
    log.locator("tbody tr", has_text="Amended and approved").locator("td:nth-child(4) a").click()
    expect(page.locator("#filter-clip")).to_have_value("c3")
    texts = log.locator("tbody tr td:nth-child(4)").all_inner_texts()
    assert texts and set(texts) == {"c3"}
    screenshot(page, "work-log")


def test_a_researcher_sees_pseudonyms(sign_in, live_server, gold_world, page):  # noqa: F811
    sign_in("researcher", "pw-researcher")
    page.goto(f"{live_server.url}/studies/s1/annotator-quality/")
    study, people = gold_world["study"], gold_world["personas"]
    expected = pseudonym(study.release_secret, people["annotator"].pk)
    expect(page.locator(f'#annotator-quality tr[data-person="{expected}"]')).to_have_count(1)
    assert "annotator" not in page.locator("#annotator-quality tbody").inner_text().replace("person-", "")
    page.goto(f"{live_server.url}/studies/s1/work-log/")
    who = set(page.locator("#work-log tbody tr td:nth-child(2)").all_inner_texts())
    assert who and all(name.startswith("person-") or name == "(the system)" for name in who)

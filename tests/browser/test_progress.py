"""The progress page shows its tables at once, then fills in agreement from its own request."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.selectors.progress import study_progress
from tests.annotation.bulkbuild import build_study
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_agreement_table_arrives_after_the_page(sign_in, live_server, study, personas, page):
    build_study(study, clips=12, models=2, windows=3, double_share=0.5, annotators=3)
    expected = study_progress(study=study)
    sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/progress/")
    table = page.locator("#agreement")
    expect(table).to_be_visible()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(len(expected.agreement))
    first = rows.first.locator("td")
    assert first.nth(0).inner_text() == expected.agreement[0].label
    assert first.nth(3).inner_text() == str(expected.agreement[0].result.items)
    status = f"{expected.double_annotated} double-annotated captions."
    expect(page.locator("#agreement-status")).to_have_text(status)
    screenshot(page, "progress")

"""A researcher starts a study scoring job from the study page, as an admin does; others see no panel."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scoring.models import ScoreJob

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_starts_a_study_scoring_job_from_the_study_page(sign_in, live_server, personas):
    page = sign_in("researcher", "pw-researcher")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/studies/s1/")
    expect(page.locator("#score-job-table")).to_contain_text("No scoring jobs yet.")
    page.get_by_role("button", name="Score now").click()
    expect(page.locator("#score-now-result")).to_contain_text("Job #")
    expect(page.locator("#score-now-result")).not_to_have_class("muted error")
    job = ScoreJob.objects.get()
    assert (job.kind, job.requested_by.username) == ("study", "researcher")
    expect(page.locator(f"#score-job-table tr[data-job='{job.pk}']")).to_contain_text("by researcher")
    assert not errors


@pytest.mark.parametrize("role", ["annotator", "reviewer"])
def test_annotators_and_reviewers_see_no_scoring_panel(sign_in, live_server, personas, role):
    page = sign_in(role, f"pw-{role}")
    page.goto(f"{live_server.url}/studies/s1/")
    expect(page.get_by_role("heading", name="Failure taxonomy")).to_be_visible()
    expect(page.locator("#score-now")).to_have_count(0)

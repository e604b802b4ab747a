"""The study page: an admin pages through the clips; an annotator sees their own work there."""

import re

import pytest
from playwright.sync_api import expect

from annotation.selectors.clips import CLIPS_PER_PAGE
from annotation.services.workflow import annotations_assign
from tests.annotation.studybuild import caption_record, captions_add, fake_clip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def many_clips(study, personas):
    names = [f"clip-{n:03d}" for n in range(CLIPS_PER_PAGE + 3)]
    for name in names:
        fake_clip(study, name)
    captions_add(study, [caption_record(name) for name in names[:2]])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    return names


def test_an_admin_pages_through_the_clips(sign_in, live_server, many_clips):
    page = sign_in("admin", "pw-admin")
    page.get_by_role("link", name="Study one").click()
    expect(page.locator("#clip-count")).to_have_text(f"({len(many_clips)})")
    expect(page.locator(".clip-card")).to_have_count(CLIPS_PER_PAGE)
    page.get_by_role("link", name="Next page").click()
    page.wait_for_url("**/studies/s1/?page=2#clips")
    expect(page.locator(".clip-card")).to_have_count(3)
    expect(page.locator(f".clip-card[data-clip={many_clips[-1]}]")).to_be_visible()
    expect(page.locator("#clip-range")).to_contain_text(f"Clips {CLIPS_PER_PAGE + 1} to {len(many_clips)}")


def test_an_annotator_sees_their_work_not_the_clips(sign_in, live_server, many_clips):
    page = sign_in("annotator", "pw-annotator")
    page.get_by_role("link", name="Study one").click()
    expect(page.locator("#your-work")).to_contain_text("0 of 2 submitted")
    expect(page.locator("#your-next")).to_contain_text(re.compile(r"Next: clip-00[01] \(3 windows\)"))
    expect(page.locator(".clip-card")).to_have_count(0)
    page.locator("#queue-link").click()
    expect(page.locator("#queue tbody tr")).to_have_count(2)

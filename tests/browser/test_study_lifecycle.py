"""A study admin starts a study from its setup checklist, downloads the data release, and
closes the study through the confirmation that shows what is unfinished."""

from __future__ import annotations

import io
import zipfile

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, AuditEvent, Study
from annotation.services import lifecycle
from annotation.services.studies import membership_grant
from annotation.services.taxonomy import taxonomy_default
from annotation.services.workflow import annotations_assign, review_approve, review_claim
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def lab(personas):
    study = Study.objects.create(slug="lab", name="Lab study", taxonomy=taxonomy_default(), state="setup")
    membership_grant(study=study, user=personas["admin"], role="admin")
    return study


def make_ready(study, personas):
    for role in ("annotator", "reviewer", "researcher"):
        membership_grant(study=study, user=personas[role], role=role)
    for name in ("c1", "c2"):
        fake_clip(study, name)
    captions_add(study, [caption_record("c1"), caption_record("c2")])
    annotations_assign(study=study, annotators=[personas["annotator"]])


def test_start_from_the_checklist_release_and_close_with_confirmation(
        sign_in, live_server, personas, lab, monkeypatch, settings):
    settings.SCORING_ON_FINAL_VERDICT = False
    # The final profile's export (tests/annotation/test_lifecycle.py) would run inside the
    # close request here, where jobs run eagerly: left out of this test of the page.
    monkeypatch.setattr(lifecycle, "STUDY_CLOSED_HOOKS", [])
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/lab/")
    checklist = page.locator("#setup-checklist")
    expect(checklist.locator("li.missing")).to_have_count(6)
    page.get_by_role("button", name="Start the study").click()
    expect(page.locator("#lifecycle-result")).to_contain_text("Cannot start yet: no clips imported")
    assert Study.objects.get(pk=lab.pk).state == "setup"
    screenshot(page, "study-setup-checklist")

    make_ready(lab, personas)
    page.reload()
    expect(checklist.locator("li.missing")).to_have_count(0)
    page.get_by_role("button", name="Start the study").click()
    expect(page.locator("#dashboard")).to_be_visible()
    assert Study.objects.get(pk=lab.pk).state == "running"
    expect(page.locator("[data-count=idle] dd")).to_have_text("1")

    item = Annotation.objects.filter(caption__clip__name="c1").get()
    complete(item, personas["annotator"])
    review_claim(annotation_id=item.pk, actor=personas["reviewer"])
    review_approve(annotation_id=item.pk, actor=personas["reviewer"])
    page.reload()
    expect(page.locator("[data-count=unscored] dd")).to_have_text("1")

    page.locator("#release-license").select_option("CC0-1.0")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the release (zip)").click()
    archive = zipfile.ZipFile(download.value.path())
    captions = pq.read_table(io.BytesIO(archive.read("lab-release/captions.parquet"))).to_pylist()
    assert [(row["clip"], row["model"]) for row in captions] == [("c1", "Model A")]
    assert "license: cc0-1.0" in archive.read("lab-release/README.md").decode()

    page.get_by_role("button", name="Close the study…").click()
    dialog = page.locator("#close-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#unfinished-list [data-kind=assigned]")).to_have_text("1 not started")
    screenshot(page, "study-close-confirmation")
    dialog.get_by_role("button", name="Keep it running").click()
    expect(dialog).to_be_hidden()
    assert Study.objects.get(pk=lab.pk).state == "running"

    page.get_by_role("button", name="Close the study…").click()
    dialog.get_by_role("button", name="Close the study").click()
    expect(page.get_by_role("heading", name="Study closed")).to_be_visible()
    assert Study.objects.get(pk=lab.pk).state == "closed"
    assert AuditEvent.objects.filter(study=lab, action="study_close", actor=personas["admin"]).count() == 1


def test_starting_with_unassigned_captions_asks_first_and_closing_counts_them(
        sign_in, live_server, personas, lab, monkeypatch, settings):
    settings.SCORING_ON_FINAL_VERDICT = False
    monkeypatch.setattr(lifecycle, "STUDY_CLOSED_HOOKS", [])
    for role in ("annotator", "reviewer", "researcher"):
        membership_grant(study=lab, user=personas[role], role=role)
    for name in ("c1", "c2"):
        fake_clip(lab, name)
    captions_add(lab, [caption_record(name, model) for name in ("c1", "c2") for model in ("m1", "m2")])
    annotations_assign(study=lab, annotators=[personas["annotator"]], design="one_model_per_clip")
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/lab/")
    warning = page.locator("#setup-checklist li.warn[data-item=unassigned]")
    expect(warning).to_contain_text("2 of 4 captions have no annotator: too few annotators")
    screenshot(page, "study-setup-unassigned")

    page.get_by_role("button", name="Start the study").click()
    dialog = page.locator("#start-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#start-unassigned")).to_contain_text("2 of 4 captions have no annotator")
    screenshot(page, "study-start-unassigned-confirmation")
    dialog.get_by_role("button", name="Not yet").click()
    expect(dialog).to_be_hidden()
    assert Study.objects.get(pk=lab.pk).state == "setup"

    page.get_by_role("button", name="Start the study").click()
    dialog.get_by_role("button", name="Start anyway").click()
    expect(page.locator("#dashboard")).to_be_visible()
    assert Study.objects.get(pk=lab.pk).state == "running"

    page.get_by_role("button", name="Close the study…").click()
    closing = page.locator("#close-dialog")
    expect(closing.locator("#unfinished-list [data-kind=unassigned]")).to_have_text("2 captions with no annotator")
    expect(closing.locator("#unfinished-list [data-kind=assigned]")).to_have_text("2 not started")

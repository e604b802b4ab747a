"""A study admin imports a caption file on the study page and follows its job's progress bar."""

from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile
from playwright.sync_api import expect

from annotation.models import Caption, CaptionImportJob
from annotation.services.caption_jobs import (
    STORING,
    caption_import_job_create,
    caption_import_job_run,
    caption_import_progress_write,
)
from tests.annotation.studybuild import caption_record, fake_clip
from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def clips(study):
    return [fake_clip(study, name) for name in ("a", "b", "c")]


def lines(*records) -> bytes:
    return "\n".join(json.dumps(record) for record in records).encode()


def choose_and_import(page, name: str, data: bytes) -> None:
    form = page.locator("#caption-import-form")
    form.get_by_label("caption file").set_input_files(
        files=[{"name": name, "mimeType": "application/jsonl", "buffer": data}]
    )
    form.get_by_role("button", name="Import").click()


def test_an_import_on_the_study_page_fills_its_bar_and_ends_with_the_report(
    sign_in, live_server, personas, clips
):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    choose_and_import(page, "captions.jsonl", lines(*(caption_record(c, "m1") for c in "abc")))

    job = page.locator("#caption-import-jobs .import-job")
    expect(job.locator("[role=status]")).to_have_text("3 of 3 captions stored.")
    expect(job.locator(".import-job-state")).to_have_text("done")
    expect(job.locator(".import-job-report")).to_contain_text("Stored 3 caption(s); new models: m1.")
    assert job.locator("progress").evaluate("bar => [bar.value, bar.max]") == [3, 3]
    assert job.locator("[role=status]").get_attribute("aria-live") == "polite"
    assert Caption.objects.count() == 3
    screenshot(page, "study-caption-import-done")

    page.get_by_role("link", name="Reload the page to see them.").click()
    expect(page.locator("#caption-import-jobs .import-job-report")).to_contain_text("Stored 3 caption(s)")


def test_a_refused_import_lists_its_errors_as_text_never_as_markup(
    sign_in, live_server, personas, clips
):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    hostile = caption_record("<img src=x id=injected>", "m1")
    choose_and_import(page, "bad.jsonl", lines(caption_record("a", "m1"), hostile))

    job = page.locator("#caption-import-jobs .import-job")
    expect(job.locator(".import-job-state")).to_have_text("refused")
    expect(job.locator("[role=status]")).to_have_text("1 error(s); nothing was stored.")
    expect(job.locator(".import-job-errors li")).to_have_text(
        ['line 2, clip: unknown clip "<img src=x id=injected>" (not among the 3 clips imported)']
    )
    assert page.locator("#injected").count() == 0
    assert job.locator("progress").is_hidden()
    assert Caption.objects.count() == 0


def test_reloading_the_page_while_an_import_runs_resumes_its_bar(
    sign_in, live_server, personas, clips, study
):
    data = lines(*(caption_record(c, m) for c in "abc" for m in ("m1", "m2")))
    job = caption_import_job_create(study=study, upload=ContentFile(data), file_name="six.jsonl",
                                    requested_by=personas["admin"], enqueue=False)
    # Halfway through storing, as a worker's run leaves it (the run claims it again below).
    CaptionImportJob.objects.filter(pk=job.pk).update(state="running")
    caption_import_progress_write(job_id=job.pk, phase=STORING, stored=2, total=6)

    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    shown = page.locator(f"#caption-import-jobs [data-job='{job.pk}']")
    expect(shown.locator("[role=status]")).to_have_text("2 of 6 captions stored")
    assert shown.locator("progress").evaluate("bar => [bar.value, bar.max]") == [2, 6]
    screenshot(page, "study-caption-import-running")

    assert caption_import_job_run(job_id=job.pk, task_id=job.task_id) == "done"
    expect(shown.locator("[role=status]")).to_have_text("6 of 6 captions stored.")
    expect(shown.locator(".import-job-report")).to_contain_text("Stored 6 caption(s); new models: m1, m2.")

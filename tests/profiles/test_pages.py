"""The profile page, its export jobs and downloads: researchers and admins only."""

import io
import json
import zipfile

import pytest
from django.urls import reverse

from annotation.models import CandidateModel
from scoring import profile_jobs

pytestmark = pytest.mark.django_db

SMALL = {"resamples": 30, "adjusted_resamples": 10, "seed": 1}


def signed_in(client, person):
    client.force_login(person)
    return client


def start(client, study, django_capture_on_commit_callbacks, **options):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(
            reverse("profile-jobs", args=[study.slug]),
            {**SMALL, **options},
            content_type="application/json",
        )


@pytest.fixture
def finished(scripted, personas, client, django_capture_on_commit_callbacks):
    """A finished export job of the scripted study, started by the researcher."""
    signed_in(client, personas["researcher"])
    response = start(client, scripted, django_capture_on_commit_callbacks)
    assert response.status_code == 202 and response.json()["state"] == "queued"
    # The task was sent when the request's transaction committed; eager, it has run by now.
    return client.get(response.json()["url"]).json()


@pytest.mark.parametrize("role", ["researcher", "admin"])
def test_researchers_and_admins_see_the_page_and_the_study_links_to_it(
    client, scripted, personas, role
):
    signed_in(client, personas[role])
    page = client.get(reverse("profiles", args=[scripted.slug]))
    assert page.status_code == 200 and b"Build profile" in page.content
    assert b'id="profiles-link"' in client.get(reverse("study", args=[scripted.slug])).content


def test_everyone_else_gets_not_found_everywhere(client, scripted, personas, finished):
    model = CandidateModel.objects.get(study=scripted, name="Alpha")
    job = finished["job"]
    urls = [
        reverse("profiles", args=[scripted.slug]),
        reverse("profile-job", args=[scripted.slug, job]),
        reverse("profile-job-file", args=[scripted.slug, job, "report.html"]),
        reverse("profile-job-file", args=[scripted.slug, job, finished["zip"]["name"]]),
        reverse("corrected-jsonl", args=[scripted.slug, model.pk]),
        reverse("corrected-vtt", args=[scripted.slug, model.pk]),
    ]
    for role in ("annotator", "reviewer", "outsider"):
        signed_in(client, personas[role])
        for url in urls:
            assert client.get(url).status_code == 404, (role, url)
        assert (
            client.post(
                reverse("profile-jobs", args=[scripted.slug]),
                SMALL,
                content_type="application/json",
            ).status_code
            == 404
        )
        if role != "outsider":
            assert (
                b"profiles-link" not in client.get(reverse("study", args=[scripted.slug])).content
            )
    signed_in(client, personas["researcher"])
    assert all(client.get(url).status_code == 200 for url in urls)


def test_anonymous_visitors_are_sent_to_sign_in(client, scripted):
    response = client.get(reverse("profiles", args=[scripted.slug]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_job_runs_to_done_with_the_main_table_figures_and_files(client, finished, scripted):
    status = client.get(finished["url"]).json()
    assert status["state"] == "done" and status["percent"] == 100
    assert status["options"] == {**SMALL, "paired_only": False}
    # Bravo's final overviews on the paired clips were both accepted, Alpha's one of two.
    assert [row["model"] for row in status["main_table"]["rows"]] == ["Bravo", "Alpha"]
    # Rejection rate by exposure: one annotator met both models of c1 and c2 in clip blocks.
    exposure = status["rejection_by_exposure"]
    assert [row["model"] for row in exposure["rows"]] == ["Bravo", "Alpha", "all models"]
    assert exposure["rows"][-1]["first_captions"] == 3
    assert exposure["rows"][-1]["later_captions"] == 2
    assert len(status["figures"]) == 10 and status["figures_failed"] == {}
    png = client.get(status["figures"][0]["png_url"])
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert "attachment" not in png.get("Content-Disposition", "")
    page = client.get(reverse("profiles", args=[scripted.slug]))
    assert page.context["job"]["state"] == "done" and b'id="profile-job"' in page.content


def test_every_file_downloads_alone_and_in_the_zip_and_nothing_else_does(
    client, finished, scripted
):
    status = client.get(finished["url"]).json()
    bundle = zipfile.ZipFile(
        io.BytesIO(b"".join(client.get(status["zip"]["url"]).streaming_content))
    )
    names = [f["name"] for f in status["files"]]
    assert sorted(bundle.namelist()) == sorted(names)
    assert "report.html" in names and "tables/model_profile.csv" in names
    assert "figures/figure10_omission_vs_factual.svg" in names
    csv_file = next(f for f in status["files"] if f["name"] == "tables/model_profile.csv")
    response = client.get(csv_file["url"])
    assert "attachment" in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == bundle.read("tables/model_profile.csv")
    for name in (
        "../status.json",
        "status.json",
        "claim",
        "files/report.html",
        "x.png",
        "..%2Fclaim",
    ):
        url = reverse("profile-job-file", args=[scripted.slug, finished["job"], name])
        assert client.get(url).status_code == 404, name


def test_the_report_opens_in_the_browser_behind_a_strict_policy(client, finished):
    status = client.get(finished["url"]).json()
    response = client.get(status["report_url"])
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert "sandbox" in response["Content-Security-Policy"]
    assert "attachment" in client.get(status["report_url"] + "?download=1")["Content-Disposition"]


def test_an_unknown_job_is_not_found(client, scripted, personas):
    signed_in(client, personas["researcher"])
    assert client.get(reverse("profile-job", args=[scripted.slug, "0" * 32])).status_code == 404
    assert client.get(f"/studies/{scripted.slug}/profiles/jobs/not-a-job/").status_code == 404


@pytest.mark.parametrize(
    "options",
    [{"resamples": 0}, {"resamples": "many"}, {"seed": -1}, {"adjusted_resamples": 10**7}],
)
def test_bad_options_are_refused(
    client, scripted, personas, options, django_capture_on_commit_callbacks
):
    signed_in(client, personas["admin"])
    response = start(client, scripted, django_capture_on_commit_callbacks, **options)
    assert response.status_code == 400 and response.json()["detail"]


def test_a_study_without_final_verdicts_exports_with_every_table_marked(
    client, study, personas, django_capture_on_commit_callbacks
):
    signed_in(client, personas["researcher"])
    response = start(client, study, django_capture_on_commit_callbacks)
    assert response.status_code == 202
    job = client.get(response.json()["url"]).json()
    assert job["state"] == "done" and job["figures"] == []
    assert job["not_computable"]["metric_auc"] == (
        "not computable: needs at least one caption with a final verdict")


def test_the_form_posted_without_javascript_starts_the_job_and_returns_to_the_page(
    client, scripted, personas, django_capture_on_commit_callbacks
):
    signed_in(client, personas["researcher"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("profile-jobs", args=[scripted.slug]),
                               {**SMALL, "paired_only": "on"})
    assert response.status_code == 302 and response.url == reverse("profiles", args=[scripted.slug])
    [job] = profile_jobs.profile_jobs(study=scripted)
    assert job["state"] == "done" and job["options"]["paired_only"] is True
    assert job["options"]["resamples"] == SMALL["resamples"]
    page, job_id = client.get(response.url).content.decode(), job["job"]
    assert f'"job": "{job_id}"' in page


def test_a_bad_form_post_shows_the_page_again_with_the_error_and_the_values(
    client, scripted, personas
):
    signed_in(client, personas["researcher"])
    response = client.post(reverse("profile-jobs", args=[scripted.slug]),
                           {"resamples": "<b>many</b>", "adjusted_resamples": "40", "seed": "3"})
    page = response.content.decode()
    assert response.status_code == 400
    assert "resamples must be a whole number, not &#x27;&lt;b&gt;many&lt;/b&gt;&#x27;." in page
    assert 'name="adjusted_resamples" min="1" max="200000" value="40"' in page
    assert 'name="seed" min="0" value="3"' in page
    assert profile_jobs.profile_jobs(study=scripted) == []


def test_running_a_finished_job_again_changes_nothing(finished, scripted):
    folder = profile_jobs.job_dir(scripted, finished["job"])
    before = (folder / "status.json").read_bytes()
    stamps = {path: path.stat().st_mtime_ns for path in folder.rglob("*")}
    from scoring.profile_tasks import export_profile

    assert export_profile(scripted.pk, finished["job"]) == "done"
    assert (folder / "status.json").read_bytes() == before
    assert {path: path.stat().st_mtime_ns for path in folder.rglob("*")} == stamps


def test_a_job_claimed_by_a_live_run_is_left_to_it(scripted, personas):
    status = profile_jobs.profile_job_create(study=scripted, **SMALL)  # not committed: never sent
    folder = profile_jobs.job_dir(scripted, status["job"])
    (folder / "claim").write_text(json.dumps({"token": "someone-else"}))
    assert profile_jobs.profile_job_run(study_id=scripted.pk, job_id=status["job"])["state"] == "queued"
    assert not (folder / "files").exists()


def test_a_job_whose_run_died_is_taken_over_after_the_lease(scripted, settings):
    settings.PROFILE_JOB_LEASE_SECONDS = 0
    status = profile_jobs.profile_job_create(study=scripted, **SMALL)
    folder = profile_jobs.job_dir(scripted, status["job"])
    (folder / "claim").write_text(json.dumps({"token": "a-dead-run"}))
    assert profile_jobs.profile_job_run(study_id=scripted.pk, job_id=status["job"])["state"] == "done"
    assert (folder / "files" / "report.html").is_file()


def test_the_worker_finds_the_export_task():
    from config.celery import app

    app.loader.import_default_modules()
    assert "scoring.export_profile" in app.tasks


def test_corrected_captions_download_as_json_lines(client, scripted, personas):
    signed_in(client, personas["researcher"])
    alpha = CandidateModel.objects.get(study=scripted, name="Alpha")
    response = client.get(reverse("corrected-jsonl", args=[scripted.slug, alpha.pk]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    records = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [r["clip"] for r in records] == ["c1", "c2", "c3"]
    assert (
        records[0]["overview"] == "A test card with a counter."
        and records[0]["final_pass"] == "annotator"
    )
    assert [(w["start"], w["end"]) for w in records[1]["timeline"]] == [(0, 3), (3, 6)]


def test_corrected_timelines_download_as_webvtt(client, scripted, personas):
    signed_in(client, personas["admin"])
    alpha = CandidateModel.objects.get(study=scripted, name="Alpha")
    bravo = CandidateModel.objects.get(study=scripted, name="Bravo")
    url = reverse("corrected-vtt", args=[scripted.slug, alpha.pk])
    bundle = zipfile.ZipFile(io.BytesIO(client.get(url).content))
    assert bundle.namelist() == ["c1.vtt", "c2.vtt", "c3.vtt"]
    single = client.get(url, {"clip": "c2"})
    assert single["Content-Type"].startswith("text/vtt")
    text = single.content.decode()
    assert text == bundle.read("c2.vtt").decode()
    assert (
        "00:00:00.000 --> 00:00:03.000\nBars &amp; a &lt;counter&gt;.\nStatic --&gt; frame." in text
    )
    amended = client.get(reverse("corrected-vtt", args=[scripted.slug, bravo.pk]), {"clip": "c1"})
    assert (
        "00:00:04.000 --> 00:00:06.000\nThe counter reaches five.\nSlow zoom in."
        in amended.content.decode()
    )
    assert client.get(url, {"clip": "nope"}).status_code == 404

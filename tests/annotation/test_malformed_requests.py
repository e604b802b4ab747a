"""Bodies and addresses no endpoint can use answer 400 (or 413) saying why, never 500, and start
nothing: numbers of thousands of digits, bytes that are not UTF-8, JSON nested 50,000 deep, a NUL
in the address, a body that is not the documented JSON object, a file over the import limit."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.models import CaptionImportJob
from scoring.models import ScoreJob

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def profile_jobs_started(study) -> int:
    from scoring import profile_jobs

    return len(profile_jobs.profile_jobs(study=study))


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"resamples": ' + b"9" * 5000 + b"}", "resamples: 99999999999999999999... is a number with "
                                            "more than 30 digits"),
    (b'{"resamples": "' + b"9" * 5000 + b'"}', "resamples must be a whole number of at most 30 "
                                              "digits"),
    (b'{"seed": "caf\xe9"}', "The body is not valid utf-8 text"),
    (b'{"a": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", "nested more than 32 levels deep"),
    (b"[]", "Send a JSON object."),
])
def test_a_profile_export_body_that_cannot_be_read_is_refused_saying_why(study, personas, body,
                                                                          reason):
    answer = signed_in(personas["researcher"]).post(
        "/studies/s1/profiles/jobs/", body, content_type="application/json")
    assert answer.status_code == 400, answer.content[:300]
    assert reason in answer.json()["detail"]
    assert profile_jobs_started(study) == 0


@pytest.mark.parametrize("path", ["/studies/s1/clips/%00/", "/studies/s1/clips/a%00b/",
                                  "/studies/s1/profiles/jobs/%00/"])
def test_a_nul_in_the_address_is_refused_saying_so(study, personas, path):
    answer = signed_in(personas["admin"]).get(path)
    assert answer.status_code == 400
    assert "NUL character" in answer.content.decode()


def test_a_nul_in_an_api_address_is_refused_in_json(study, personas):
    answer = signed_in(personas["admin"]).get("/api/studies/s1%00/")
    assert answer.status_code == 400 and "NUL character" in answer.json()["detail"]


# ------------------------------------------------------------------ bodies that are not the documented ones


@pytest.mark.parametrize(("body", "content_type", "status"), [
    ("[]", "multipart/form-data; boundary=BoUnDaRy", 415),
    ("--BoUnDaRy\r\nContent-Disposition: form-data; name=\"metrics\"\r\n\r\n[]\r\n--BoUnDaRy--\r\n",
     "multipart/form-data; boundary=BoUnDaRy", 415),
    ("metrics=edit_size", "application/x-www-form-urlencoded", 415),
    ("[]", "application/json", 400),
    ('"edit_size"', "application/json", 400),
])
def test_starting_a_score_job_with_a_body_that_is_not_a_json_object_is_refused(
    study, personas, body, content_type, status
):
    answer = signed_in(personas["admin"]).post("/api/studies/s1/score-jobs/", body,
                                               content_type=content_type)
    assert answer.status_code == status, answer.content[:300]
    assert answer.json()["detail"]
    assert not ScoreJob.objects.exists()


@pytest.mark.parametrize(("size", "said"), [
    (1_100_000, "The upload is 1.1"),  # refused from its length, before the body is read
    (1_010_000, "captions.jsonl is 1.01 MB"),  # refused once the file's size is known
])
def test_a_caption_file_over_the_limit_is_refused_in_the_request_naming_the_limit(
    study, personas, settings, size, said
):
    settings.MAX_IMPORT_FILE_MB = 1
    for path in ("/api/studies/s1/captions/import-jobs/", "/api/studies/s1/captions/import/"):
        big = SimpleUploadedFile("captions.jsonl", b"x" * size)
        answer = signed_in(personas["admin"]).post(path, {"file": big})
        assert answer.status_code == 413, (path, answer.content[:300])
        assert said in answer.json()["detail"]
        assert answer.json()["detail"].endswith(
            "files imported here may be at most 1 MB (MAX_IMPORT_FILE_MB).")
    assert not CaptionImportJob.objects.exists()


def test_a_file_within_the_limit_is_still_taken(study, personas, settings):
    settings.MAX_IMPORT_FILE_MB = 1
    small = SimpleUploadedFile("captions.jsonl", b"x" * 999_000)
    answer = signed_in(personas["admin"]).post("/api/studies/s1/captions/import/", {"file": small})
    assert answer.status_code == 400 and "nothing was stored" in answer.json()["detail"]

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Caption, Clip

pytestmark = pytest.mark.django_db

CAPTION = {
    "clip": "a", "model": "SecretModel-7B", "overview": "A pattern.",
    "windows": [{"start": 0, "end": 2, "scene": "Colours.", "shot": "Static."}],
}


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(name: str, data: bytes):
    return {"file": SimpleUploadedFile(name, data)}


def test_admin_imports_captions_through_the_api(personas, clips):
    response = client_for(personas["admin"]).post(
        "/api/studies/s1/captions/import/", upload("c.jsonl", json.dumps(CAPTION).encode()), format="multipart"
    )
    assert response.status_code == 201, response.content
    assert response.json()["stored"] == 1
    assert Caption.objects.count() == 1


def test_api_import_with_errors_lists_them_and_stores_nothing(personas, clips):
    bad = {**CAPTION, "clip": "nope"}
    response = client_for(personas["admin"]).post(
        "/api/studies/s1/captions/import/", upload("c.jsonl", json.dumps(bad).encode()), format="multipart"
    )
    assert response.status_code == 400
    assert "unknown clip" in response.json()["errors"][0]
    assert Caption.objects.count() == 0


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher", "outsider"])
def test_only_study_admins_may_import(personas, clips, role):
    response = client_for(personas[role]).post(
        "/api/studies/s1/captions/import/", upload("c.jsonl", json.dumps(CAPTION).encode()), format="multipart"
    )
    assert response.status_code in (403, 404)
    assert Caption.objects.count() == 0


def test_admin_uploads_a_video_and_a_text_file_is_refused_by_name(personas, study, clip_files):
    client = client_for(personas["admin"])
    good = client.post("/api/studies/s1/clips/upload/", upload("a.mp4", clip_files["a"].read_bytes()),
                       format="multipart")
    assert good.status_code == 201 and good.json()["name"] == "a"
    bad = client.post("/api/studies/s1/clips/upload/", upload("notes.mp4", b"hello"), format="multipart")
    assert bad.status_code == 400 and "notes.mp4" in bad.json()["detail"]
    assert Clip.objects.count() == 1


def test_annotators_see_only_the_neutral_alias(personas, clips):
    client_for(personas["admin"]).post(
        "/api/studies/s1/captions/import/", upload("c.jsonl", json.dumps(CAPTION).encode()), format="multipart"
    )
    annotator = client_for(personas["annotator"])
    assert annotator.get("/api/studies/s1/captions/").json()["results"] == []  # none assigned yet
    from annotation.services.workflow import annotations_assign

    annotations_assign(study=clips["a"].study, annotators=[personas["annotator"]])
    captions = annotator.get("/api/studies/s1/captions/").json()["results"]
    models = annotator.get("/api/studies/s1/models/").json()
    assert captions[0]["model"] == "Model A"
    assert models == [{"alias": "Model A"}]
    assert b"SecretModel" not in annotator.get("/api/studies/s1/captions/").content
    researcher = client_for(personas["researcher"]).get("/api/studies/s1/captions/").json()["results"]
    assert researcher[0]["model"] == "SecretModel-7B"


def test_members_of_another_study_do_not_see_this_one(personas, clips):
    client = client_for(personas["outsider"])
    assert client.get("/api/studies/s1/clips/").status_code == 404
    assert [s["slug"] for s in client.get("/api/studies/").json()["results"]] == ["s2"]


@pytest.mark.parametrize("path", ["", "clips/", "models/", "captions/", "my-queue/",
                                  "review-queue/", "score-jobs/", "scores/"])
def test_outsiders_cannot_tell_a_study_that_exists_from_one_that_does_not(personas, path):
    client = client_for(personas["outsider"])
    existing = client.get(f"/api/studies/s1/{path}")
    missing = client.get(f"/api/studies/no-such-study/{path}")
    assert (existing.status_code, existing.json()) == (missing.status_code, missing.json())
    assert existing.status_code == 404


def test_study_detail_shows_settings_and_the_taxonomy(personas):
    data = client_for(personas["annotator"]).get("/api/studies/s1/").json()
    assert data["word_thresholds"] == [1, 3, 6, 16]
    assert data["near_total_cut"] == 0.55 and data["length_band"] == 0.05
    assert len(data["taxonomy"]["modes"]) == 6
    assert data["roles"] == ["annotator"]


def test_openapi_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/studies/{slug}/captions/import/" in schema.content
    assert client.get("/api/docs/").status_code == 200


def test_admin_imports_clip_properties_and_an_unknown_clip_refuses_the_file(personas, clips):
    client = client_for(personas["admin"])
    good = client.post(
        "/api/studies/s1/clips/properties/",
        upload("p.csv", b"clip,camera_platform,manipulated\na,handheld,yes\n"), format="multipart",
    )
    assert good.status_code == 200, good.content
    assert Clip.objects.get(name="a").camera_platform == "handheld"
    bad = client.post(
        "/api/studies/s1/clips/properties/",
        upload("p.csv", b"clip,camera_platform\nb,tripod_static\nzzz,handheld\n"), format="multipart",
    )
    assert bad.status_code == 400 and "unknown clip 'zzz'" in bad.json()["errors"][0]
    assert Clip.objects.get(name="b").camera_platform == ""


def test_reference_import_with_a_bad_language_code_is_refused_clearly(personas, clips):
    response = client_for(personas["admin"]).post(
        "/api/studies/s1/references/import/?format=fm-v2t&language=not%20a%20language",
        upload("d.csv", b"Video-Filename,Text\na,Hello\n"), format="multipart",
    )
    assert response.status_code == 400
    assert "language" in response.json()["errors"][0]


def test_admin_imports_a_clip_cc_model_file_through_the_api(personas, clips):
    response = client_for(personas["admin"]).post(
        "/api/studies/s1/captions/import/?format=clip-cc&model=longva",
        upload("x.json", json.dumps({"a": "A paragraph."}).encode()), format="multipart",
    )
    assert response.status_code == 201, response.content
    assert Caption.objects.get().model.name == "longva"


def test_the_clip_list_gives_each_clips_shot_changes(personas, clips):
    Clip.objects.filter(name="b").update(shot_changes=[1.5, 4.04])
    listed = client_for(personas["admin"]).get("/api/studies/s1/clips/").json()["results"]
    assert {clip["name"]: clip["shot_changes"] for clip in listed} == {"a": None, "b": [1.5, 4.04]}

"""A full disk is a clear 503 with Retry-After that names the problem, not a server error (the
soak's finding; a 507 read as a fault, since every 5xx but a 503 with Retry-After does): the
media folder is a real tmpfs filled to its last byte."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Clip

pytestmark = pytest.mark.django_db


@pytest.fixture
def full_media(settings, tmp_path):
    """MEDIA_ROOT on a 1 MB tmpfs with no byte left."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root (CI and `make test` run as root)")
    folder = tmp_path / "media"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        with open(folder / "filler", "wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
            except OSError:
                pass
        settings.MEDIA_ROOT = str(folder)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_an_upload_onto_a_full_disk_is_refused_with_503_and_stores_no_clip(
    personas, study, clip_files, full_media
):
    client = APIClient()
    client.force_authenticate(personas["admin"])
    response = client.post(
        "/api/studies/s1/clips/upload/",
        {"file": SimpleUploadedFile("a.mp4", clip_files["a"].read_bytes())}, format="multipart")
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "disk is full" in response.json()["detail"]
    assert Clip.objects.count() == 0


def files_under(folder) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.name != "filler")


def test_a_refused_upload_leaves_no_file_and_the_retry_is_stored_under_its_own_name(
    personas, study, clip_files, full_media
):
    """The soak's finding: a 0-byte file was left under clips/original/, and the successful retry
    was stored beside it under another name."""
    client = APIClient()
    client.force_authenticate(personas["admin"])
    data = clip_files["a"].read_bytes()
    refused = client.post("/api/studies/s1/clips/upload/", {"file": SimpleUploadedFile("a.mp4", data)},
                          format="multipart")
    assert refused.status_code == 503
    assert [name for name in files_under(full_media) if not (full_media / name).is_dir()] == []

    (full_media / "filler").unlink()  # the operator frees some room
    stored = client.post("/api/studies/s1/clips/upload/", {"file": SimpleUploadedFile("a.mp4", data)},
                         format="multipart")
    assert stored.status_code == 201, stored.content
    clip = Clip.objects.get()
    stored_name = clip.original.name.removeprefix("clips/original/")
    assert files_under(full_media / "clips/original") == ["s1", stored_name]
    assert clip.original.name == f"clips/original/s1/{clip.sha256[:16]}.mp4"


def test_a_refused_export_leaves_no_job_folder(personas, study, client, full_media):
    """The soak's finding: a refused export left a job folder with a 0-byte temporary status."""
    client.force_login(personas["researcher"])
    response = client.post("/studies/s1/profiles/jobs/", {"resamples": 30}, content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "disk is full" in response.json()["detail"]  # the page's script reads JSON
    profiles = full_media / "profiles"
    assert not profiles.exists() or [path for path in profiles.rglob("*") if path.is_file()] == []
    assert not profiles.exists() or all(not any(folder.iterdir()) for folder in profiles.iterdir())


def test_the_export_form_posted_onto_a_full_disk_gets_a_short_503_page(personas, study, client, full_media):
    client.force_login(personas["researcher"])
    response = client.post("/studies/s1/profiles/jobs/", {"resamples": "30"})
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert response["Content-Type"].startswith("text/html")
    assert b"<h1>The disk is full</h1>" in response.content

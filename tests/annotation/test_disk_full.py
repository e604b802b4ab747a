"""A full disk is a clear 507 that names the problem, not a server error (the soak's finding):
the media folder is a real tmpfs filled to its last byte."""

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


def test_an_upload_onto_a_full_disk_is_refused_with_507_and_stores_no_clip(
    personas, study, clip_files, full_media
):
    client = APIClient()
    client.force_authenticate(personas["admin"])
    response = client.post(
        "/api/studies/s1/clips/upload/",
        {"file": SimpleUploadedFile("a.mp4", clip_files["a"].read_bytes())}, format="multipart")
    assert response.status_code == 507
    assert "disk is full" in response.json()["detail"]
    assert Clip.objects.count() == 0

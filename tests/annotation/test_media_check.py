"""manage.py media_check: files no row names and rows whose file is gone; --clean removes the
former (a dry run by default)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.media.storage import SETTLE_SECONDS
from soak.checks import media_check_findings
from tests.annotation.studybuild import fake_clip

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("media_check", *args, stdout=out)
    return out.getvalue()


def leftover(root: Path, name: str, *, data: bytes = b"") -> Path:
    """A file a failed write left, older than the settling time."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    past = time.time() - SETTLE_SECONDS - 5
    os.utime(path, (past, past))
    return path


def test_media_check_lists_orphans_and_rows_without_files_and_cleans_only_with_clean(study, media_root):
    root = Path(media_root)
    kept = fake_clip(study, "kept")
    gone = fake_clip(study, "gone")
    (root / gone.original.name).unlink()
    for clip in (kept, gone):  # the clips' own files are settled too
        for field in (clip.original, clip.poster):
            if (root / field.name).exists():
                os.utime(root / field.name, (time.time() - 600, time.time() - 600))
    partial = leftover(root, "clips/original/s1/0123456789abcdef.mp4")
    job_debris = leftover(root, "profiles/s1/" + "a" * 32 + "/.status.json.0f0f")
    new_folder = leftover(root, "profiles/s1/.abc.new/status.json")
    for folder in (job_debris.parent, new_folder.parent):
        os.utime(folder, (time.time() - 600, time.time() - 600))
    fresh = root / "clips/original/s1/fresh.mp4"
    fresh.write_bytes(b"being uploaded right now")

    dry = run()
    assert "file without a row: clips/original/s1/0123456789abcdef.mp4" in dry
    assert f"file without a row: profiles/s1/{'a' * 32}" in dry  # a job folder without a status
    assert "file without a row: profiles/s1/.abc.new" in dry
    assert f"row without its file: clip gone (#{gone.pk}) original: {gone.original.name}" in dry
    assert "3 file(s) without a row found (run with --clean to remove them); 1 row(s) without their file." in dry
    assert "fresh.mp4" not in dry and "kept" not in dry
    # The soak's check reads the same output: these four are its findings.
    assert len(media_check_findings(dry)) == 4
    assert partial.exists() and job_debris.exists() and new_folder.exists()

    cleaned = run("--clean")
    assert "3 file(s) without a row removed" in cleaned
    assert not partial.exists() and not job_debris.parent.exists() and not new_folder.parent.exists()
    assert fresh.exists() and (root / kept.original.name).exists() and (root / kept.poster.name).exists()
    after = run()
    assert "0 files without a row; 1 row(s) without their file." in after
    assert media_check_findings(after) == [
        f"row without its file: clip gone (#{gone.pk}) original: {gone.original.name}"]

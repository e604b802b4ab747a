"""Files in the media storage appear whole or not at all.

:func:`media_save` writes to a temporary name beside the file's (``.partial-…``) and gives it its
name only once every byte is written; a write that fails (a full disk) removes what it wrote.
A file made from another (a clip's proxy and poster) is saved with ``replace``: under a name of its
own, taking the place of what an interrupted run of the same job left there, so that running the
job again leaves no file that its row does not name.
:func:`media_check` lists what a crash or an older version could still have left: files that no
row names (orphans: partial files, a job folder without its status) and rows whose file is gone;
``manage.py media_check --clean`` removes the orphans.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

PARTIAL = ".partial-"


def media_save(name: str, content, *, replace: bool = False) -> str:
    """Save ``content`` under ``name`` (or a free name beside it, as Django's storage does; with
    ``replace``, under ``name`` itself, in place of the file there) and return the name given;
    nothing is left under any name when writing fails."""
    folder = posixpath.dirname(name)
    partial = posixpath.join(folder, f"{PARTIAL}{uuid.uuid4().hex}")
    try:
        partial = default_storage.save(partial, content)
    except BaseException:
        default_storage.delete(partial)
        raise
    try:
        source = default_storage.path(partial)
        if replace:
            os.replace(source, default_storage.path(name))  # atomic: the old file or the new
            return name
        while True:
            final = default_storage.get_available_name(name)
            try:
                os.link(source, default_storage.path(final))  # never replaces a file
                return final
            except FileExistsError:
                continue  # taken meanwhile by another upload: the next free name
    finally:
        default_storage.delete(partial)


@dataclass
class MediaReport:
    orphans: list[str] = field(default_factory=list)  # files (relative to MEDIA_ROOT) no row names
    missing: list[str] = field(default_factory=list)  # "what: file" for rows whose file is gone
    removed: list[str] = field(default_factory=list)


# The folders whose files rows name; other folders (profile exports) are checked by their own rules.
ROW_FOLDERS = ("clips/original", "clips/proxy", "clips/poster", "imports/captions")


def _named_files() -> dict[str, str]:
    """Every file a row names, with what names it."""
    from annotation.models import CaptionImportJob, Clip

    named: dict[str, str] = {}
    for clip in Clip.objects.only("pk", "name", "original", "proxy", "poster").iterator():
        for kind in ("original", "proxy", "poster"):
            value = getattr(clip, kind).name
            if value:
                named[value] = f"clip {clip.name} (#{clip.pk}) {kind}"
    for job in CaptionImportJob.objects.exclude(upload="").only("pk", "upload").iterator():
        named[job.upload.name] = f"caption import #{job.pk} upload"
    return named


def _profile_orphans(root: Path) -> list[Path]:
    """Under profiles/: temporary files and folders, and job folders without a status."""
    found: list[Path] = []
    profiles = root / "profiles"
    if not profiles.is_dir():
        return found
    for study in profiles.iterdir():
        if not study.is_dir():
            continue
        for entry in study.iterdir():
            if entry.name.startswith("."):
                found.append(entry)  # a job folder being created, left by a failed creation
            elif entry.is_dir() and not (entry / "status.json").is_file():
                found.append(entry)
            elif entry.is_dir():
                found.extend(path for path in entry.iterdir() if path.name.startswith(".status.json."))
    return found


#: A file younger than this is not called an orphan: its row may be about to be committed.
SETTLE_SECONDS = 60


def media_check(*, clean: bool = False) -> MediaReport:
    """Files without rows and rows without files (see the module); with ``clean``, remove the
    files without rows. Files written in the last ``SETTLE_SECONDS`` are left out."""
    import time

    root = Path(settings.MEDIA_ROOT)
    named = _named_files()
    report = MediaReport()
    orphan_paths: list[Path] = []
    for folder in ROW_FOLDERS:
        base = root / folder
        if base.is_dir():
            orphan_paths.extend(
                path for path in sorted(base.rglob("*"))
                if path.is_file() and path.relative_to(root).as_posix() not in named)
    orphan_paths.extend(sorted(_profile_orphans(root)))
    settled = time.time() - SETTLE_SECONDS
    orphan_paths = [path for path in orphan_paths if path.lstat().st_mtime < settled]
    report.orphans = [path.relative_to(root).as_posix() for path in orphan_paths]
    report.missing = sorted(f"{what}: {name}" for name, what in named.items() if not (root / name).is_file())
    if clean:
        import shutil

        for path in orphan_paths:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            report.removed.append(path.relative_to(root).as_posix())
    return report

"""Clips: probing and storing video files, their playable proxy and poster, their properties."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.errors import DuplicateClip, ImportRefused, ServiceError
from annotation.interchange import formats
from annotation.jobs import job_send_or_keep
from annotation.media import video as media
from annotation.media.storage import media_save
from annotation.models import Clip, Study
from annotation.services.study_state import Write, study_require

logger = logging.getLogger(__name__)

VIDEO_SUFFIXES = {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".ts", ".wmv", ".flv"}
PROPERTY_FIELDS = ("content_type", "camera_platform", "scene_complexity", "shot_scale", "motion_intensity")


@dataclass
class ClipImportReport:
    imported: list[Clip] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)


def clip_name_for(path: Path) -> str:
    return path.stem


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given, and every file below each folder (sorted, hidden files left out)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            )
        else:
            files.append(path)
    return files


def _validated_properties(properties: Mapping[str, str]) -> dict[str, str]:
    unknown = set(properties) - set(PROPERTY_FIELDS)
    if unknown:
        raise ServiceError(f"Unknown clip properties: {', '.join(sorted(unknown))}.")
    clean: dict[str, str] = {}
    for name, value in properties.items():
        allowed = [choice for choice, _ in Clip._meta.get_field(name).choices]
        if value and value not in allowed:
            raise ServiceError(f"{name} {value!r} is not one of: {', '.join(allowed)}.")
        clean[name] = value or ""
    return clean


def clip_import_file(
    *,
    study: Study,
    path: Path,
    properties: Mapping[str, str] | None = None,
    manipulated: bool = False,
) -> Clip:
    """Probe `path`, store a copy, and create its Clip; the proxy and poster follow in a job.

    Raises media.MediaError (not a video, truncated, unreadable) or DuplicateClip.
    """
    study_require(study, Write.CONTENT)
    path = Path(path)
    probe = media.probe(path)
    sha256 = media.sha256_file(path)
    name = clip_name_for(path)
    clean_properties = _validated_properties(properties or {})
    same_video = Clip.objects.filter(study=study, sha256=sha256).first()
    if same_video:
        raise DuplicateClip(f"{path.name}: the same video is already in the study as clip {same_video.name!r}.")
    if Clip.objects.filter(study=study, name=name).exists():
        raise DuplicateClip(f"{path.name}: the study already has a clip named {name!r}.")

    with path.open("rb") as handle:
        stored_name = media_save(
            f"clips/original/{study.slug}/{sha256[:16]}{path.suffix.lower()}", File(handle)
        )
    try:
        with transaction.atomic():
            clip = Clip.objects.create(
                study=study,
                name=name,
                original=stored_name,
                original_filename=path.name,
                size_bytes=path.stat().st_size,
                sha256=sha256,
                duration=probe.duration,
                fps=probe.fps,
                width=probe.width,
                height=probe.height,
                codec=probe.codec,
                pix_fmt=probe.pix_fmt,
                container=probe.container,
                manipulated=manipulated,
                **clean_properties,
            )
            transaction.on_commit(lambda: _enqueue_media(clip.pk))
    except Exception:
        default_storage.delete(stored_name)
        raise
    return clip


def _enqueue_media(clip_id: int) -> None:
    """Send the clip's media job; kept to be sent later when the broker does not answer (the
    clip is stored either way: its poster follows)."""
    try:
        job_send_or_keep("annotation.tasks.prepare_clip_media", args=[clip_id])
    except Exception:  # noqa: BLE001 - the clip is committed; recovery sends its media job again
        logger.exception("the media job of clip %s could not be sent", clip_id)


def clips_media_recover(*, older_than_seconds: int) -> list[int]:
    """Send again the media jobs of clips still without a poster or shot changes, and without
    an error, after ``older_than_seconds`` (their process died, or they were imported before
    shot changes were detected); return the clips' ids."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    missing = Q(poster="") | Q(shot_changes__isnull=True)
    pending = list(
        Clip.objects.filter(missing, media_error="", created_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    for clip_id in pending:
        _enqueue_media(clip_id)
    return pending


def clips_import_paths(
    *,
    study: Study,
    paths: Iterable[Path],
    properties_by_clip: Mapping[str, Mapping[str, object]] | None = None,
    progress: Callable[[int, int, str, str | None], None] | None = None,
) -> ClipImportReport:
    """Import every video file; a bad file is reported with its reason and skipped.

    `progress(done, total, file name, error or None)` is called after each file.
    Files whose suffix is not a video suffix are still probed: the suffix is a
    hint, not the truth.
    """
    study_require(study, Write.CONTENT)
    report = ClipImportReport()
    files = expand_paths(paths)
    properties_by_clip = properties_by_clip or {}
    for done, path in enumerate(files, start=1):
        error = None
        row = dict(properties_by_clip.get(clip_name_for(path), {}))
        manipulated = bool(row.pop("manipulated", False) or False)
        try:
            report.imported.append(
                clip_import_file(study=study, path=path, properties=row, manipulated=manipulated)
            )
        except (media.MediaError, ServiceError) as exc:
            error = str(exc)
            report.skipped.append((path.name, error))
        except OSError as exc:
            error = f"{path.name}: cannot be read ({exc.strerror or exc})"
            report.skipped.append((path.name, error))
        if progress:
            progress(done, len(files), path.name, error)
    return report


def clip_prepare_media(*, clip_id: int) -> Clip:
    """Make the browser-playable, faststart proxy (only when the original is not both) and the
    poster, and find the shot changes (settings.SHOT_CHANGE_THRESHOLD). Safe to run twice: the
    proxy and poster are saved under the clip's own names (its video's hash), so a run stopped
    between writing them and storing their names leaves files the next run takes over. Allowed
    in every state (the database too): these are made from the video already stored, nothing of
    the study changes."""
    clip = Clip.objects.get(pk=clip_id)
    source = Path(clip.original.path)
    updates: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="redline-media-") as workdir:
        try:
            probe = media.probe(source)
            # Every served file is faststart: a playable file written without it gets a copy
            # with its index in front (seconds, no re-encoding), anything else a proxy.
            remux = not media.needs_proxy(probe) and not media.is_faststart(source)
            if not clip.proxy and (media.needs_proxy(probe) or remux):
                target = Path(workdir) / f"{clip.sha256[:16]}.mp4"
                (media.make_faststart_copy if remux else media.make_proxy)(source, target)
                with target.open("rb") as handle:
                    updates["proxy"] = media_save(
                        f"clips/proxy/{clip.study.slug}/{target.name}", File(handle), replace=True
                    )
            if not clip.poster:
                target = Path(workdir) / f"{clip.sha256[:16]}.jpg"
                media.make_poster(source, target)
                with target.open("rb") as handle:
                    updates["poster"] = media_save(
                        f"clips/poster/{clip.study.slug}/{target.name}", File(handle), replace=True
                    )
            if clip.shot_changes is None:
                updates["shot_changes"] = media.detect_shot_changes(
                    source, settings.SHOT_CHANGE_THRESHOLD
                )
            updates["media_error"] = ""
        except media.MediaError as exc:
            logger.warning("media for clip %s failed: %s", clip.pk, exc)
            updates["media_error"] = str(exc)
    # A conditional update: a concurrent run that already stored a proxy wins.
    Clip.objects.filter(pk=clip.pk).update(**updates)
    clip.refresh_from_db()
    return clip


@transaction.atomic
def clip_properties_set(
    *, clip: Clip, properties: Mapping[str, str], manipulated: bool | None = None
) -> Clip:
    study_require(clip.study, Write.CONTENT)
    clean = _validated_properties(properties)
    for name, value in clean.items():
        setattr(clip, name, value)
    if manipulated is not None:
        clip.manipulated = manipulated
    clip.save(update_fields=[*clean, "manipulated"])
    return clip


def clip_properties_import(*, study: Study, data: bytes) -> int:
    """Apply a clip-properties CSV to the study's clips, all-or-nothing; returns the rows applied."""
    study_require(study, Write.CONTENT)
    records, errors = formats.parse_clip_properties_csv(data)
    clips = {clip.name: clip for clip in study.clips.all()}
    problems = [str(error) for error in errors] + [
        f"line {record.line}, clip: unknown clip {record.clip!r}"
        for record in records
        if record.clip not in clips
    ]
    if problems:
        raise ImportRefused(problems)
    with transaction.atomic():
        for record in records:
            clip_properties_set(
                clip=clips[record.clip], properties=record.properties, manipulated=record.manipulated
            )
    return len(records)

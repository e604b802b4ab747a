"""Clip media for members of the clip's study: ranged, streamed, permission-checked."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe

from annotation.media.streaming import ranged_file_response
from annotation.models import Clip
from annotation.permissions import is_member, require_study_work


def _member_clip(request, clip_id: int) -> Clip:
    clip = get_object_or_404(Clip.objects.select_related("study"), pk=clip_id)
    if not is_member(request.user, clip.study):
        # 404 rather than 403: outsiders learn nothing about other studies' clips.
        raise Http404("No such clip.")
    require_study_work(request.user, clip.study)
    return clip


def _serve(request, field_file):
    path = Path(field_file.path)
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    prefix = settings.MEDIA_ACCEL_PREFIX if settings.MEDIA_X_ACCEL_REDIRECT else None
    return ranged_file_response(request, path, content_type=content_type, x_accel_prefix=prefix)


@login_required
@require_safe
def clip_video(request, clip_id: int):
    clip = _member_clip(request, clip_id)
    if not clip.playable:
        raise Http404("This clip's video is not here (a study imported without its media).")
    return _serve(request, clip.playable)


@login_required
@require_safe
def clip_poster(request, clip_id: int):
    clip = _member_clip(request, clip_id)
    if not clip.poster:
        raise Http404("This clip has no poster yet.")
    return _serve(request, clip.poster)

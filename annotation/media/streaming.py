"""Serving media files with HTTP Range support, so browsers can seek in long clips.

Django's own file serving answers every request with the whole file; a ``<video>`` element then
cannot seek (Safari refuses to play at all). :func:`ranged_file_response` implements the parts of
RFC 9110 a media player relies on: single byte ranges (206), unsatisfiable ranges (416),
validators (ETag, Last-Modified), conditional requests (304, 412) and If-Range. In production it
can hand the work to nginx instead (``X-Accel-Redirect``), which serves ranges itself.

Permission checks belong to the calling view: this module only serves the path it is given.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from stat import S_ISREG
from typing import BinaryIO
from urllib.parse import quote

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response
from django.utils.http import content_disposition_header, http_date, parse_http_date_safe

__all__ = ["RangeNotSatisfiable", "parse_range", "ranged_file_response"]

_RANGE_SPEC = re.compile(r"^(\d*)-(\d*)$")
# Byte positions past any file's size: a longer number is read as "beyond the end" instead of
# being converted (Python refuses to convert integers of more than 4,300 digits).
_MAX_POSITION_DIGITS = 18


def _position(text: str) -> int:
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_POSITION_DIGITS else 10**_MAX_POSITION_DIGITS


class RangeNotSatisfiable(ValueError):
    """The Range header is well formed but selects no byte of the file (answer 416)."""


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """Interpret a ``Range`` request header for a representation of ``size`` bytes.

    Returns ``(first, last)``, both inclusive and within ``0..size-1``, for one satisfiable byte
    range: ``bytes=a-b`` (``b`` clipped to the end), ``bytes=a-`` and the suffix form ``bytes=-n``
    (the last ``n`` bytes, the whole file if ``n >= size``). Returns None when the header should be
    ignored and the whole file served with 200, which RFC 9110 allows for any Range header: when
    it is absent, malformed, in another unit, has ``a > b``, or asks for several ranges (video
    players never send multi-range requests, and answering them needs multipart/byteranges
    bodies that no client of ours would read). Raises :class:`RangeNotSatisfiable` when the range
    starts at or past the end of the file, or is the empty suffix ``bytes=-0``.
    """
    if not header:
        return None
    unit, sep, ranges = header.partition("=")
    if not sep or unit.strip().lower() != "bytes" or "," in ranges:
        return None
    match = _RANGE_SPEC.match(ranges.strip())
    if match is None:
        return None
    first_text, last_text = match.groups()
    if not first_text and not last_text:
        return None

    if not first_text:  # suffix range: the last n bytes
        suffix = _position(last_text)
        if suffix == 0 or size == 0:
            raise RangeNotSatisfiable(header)
        return max(0, size - suffix), size - 1

    first = _position(first_text)
    if last_text and _position(last_text) < first:
        return None
    if first >= size:
        raise RangeNotSatisfiable(header)
    last = min(_position(last_text), size - 1) if last_text else size - 1
    return first, last


class _FileSlice:
    """A read-only view of ``length`` bytes of an open file, starting at ``start``.

    Deliberately has no ``fileno()``: a WSGI server's sendfile() would otherwise send the file
    from the offset to its end, ignoring the range.
    """

    def __init__(self, handle: BinaryIO, start: int, length: int) -> None:
        self._handle = handle
        self._remaining = length
        handle.seek(start)

    def read(self, size: int = -1) -> bytes:
        if self._remaining <= 0:
            return b""
        want = self._remaining if size is None or size < 0 else min(size, self._remaining)
        data = self._handle.read(want)
        self._remaining -= len(data)
        return data

    def close(self) -> None:
        self._handle.close()


def _etag(stat: os.stat_result) -> str:
    # Size and modification time, as nginx does. Media files are written once and replaced
    # atomically (a new inode and mtime), so this identifies the bytes well enough to be a strong
    # validator, which If-Range requires.
    return f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'


def _if_range_allows(value: str, etag: str, mtime: int) -> bool:
    """True when an If-Range validator still matches, so the Range header may be honoured."""
    value = value.strip()
    if value.startswith(('"', "W/")):
        # If-Range uses the strong comparison: weak tags never match.
        return value == etag
    date = parse_http_date_safe(value)
    return date is not None and date == mtime


def _inline(filename: str) -> str:
    """``inline; filename=...`` with RFC 6266 encoding for names that are not plain ASCII."""
    return content_disposition_header(False, filename) or "inline"


def _accel_response(
    path: Path, *, prefix: str, media_root: Path, content_type: str
) -> HttpResponse:
    try:
        relative = path.resolve().relative_to(media_root.resolve())
    except ValueError as exc:
        raise ValueError(f"{path} is outside the media root {media_root}") from exc
    response = HttpResponse(content_type=content_type)
    # nginx URL-decodes the redirect target, so names with spaces or non-ASCII survive.
    response["X-Accel-Redirect"] = prefix.rstrip("/") + "/" + quote(relative.as_posix())
    return response


def ranged_file_response(
    request: HttpRequest,
    path: str | os.PathLike[str],
    *,
    content_type: str,
    filename: str | None = None,
    x_accel_prefix: str | None = None,
    media_root: str | os.PathLike[str] | None = None,
) -> HttpResponseBase:
    """Answer ``request`` with the file at ``path``, honouring Range and conditional headers.

    - No usable Range (absent, malformed, multi-range, see :func:`parse_range`; or an If-Range
      that no longer matches): 200 with the whole file, streamed, never read into memory.
    - One satisfiable range on GET: 206 with ``Content-Range: bytes a-b/size`` and the
      matching Content-Length. HEAD ignores Range, as RFC 9110 requires, and sends headers only.
    - A range past the end: 416 with ``Content-Range: bytes */size``.
    - If-None-Match / If-Modified-Since that still match: 304; failed If-Match /
      If-Unmodified-Since: 412 (Django's RFC 9110 precondition logic).
    Every answer but 412 carries ``Accept-Ranges: bytes``, ``ETag`` and ``Last-Modified``.
    ``filename`` adds ``Content-Disposition: inline; filename=...``; without it no name is sent
    (the stored file name stays private). Raises Http404 when the file does not exist.

    With ``x_accel_prefix`` the body is left to nginx: an empty response whose
    ``X-Accel-Redirect`` is the prefix plus ``path`` relative to ``media_root`` (default
    ``settings.MEDIA_ROOT``); nginx then does ranges and validators itself. A path outside the
    media root raises ValueError.
    """
    path = Path(path)
    if x_accel_prefix is not None:
        root = Path(media_root if media_root is not None else settings.MEDIA_ROOT)
        handed_over = _accel_response(
            path, prefix=x_accel_prefix, media_root=root, content_type=content_type
        )
        if filename:
            handed_over["Content-Disposition"] = _inline(filename)
        return handed_over

    # Open first and describe the open file, so that validators, length and body all belong to
    # the same bytes even if the file is replaced meanwhile.
    try:
        handle = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        raise Http404("No such media file") from exc
    try:
        return _respond(request, handle, content_type=content_type, filename=filename)
    except BaseException:
        handle.close()
        raise


def _respond(
    request: HttpRequest, handle: BinaryIO, *, content_type: str, filename: str | None
) -> HttpResponseBase:
    """The response for an open file; closes ``handle`` unless the response streams it."""
    stat = os.fstat(handle.fileno())
    if not S_ISREG(stat.st_mode):
        raise Http404("No such media file")
    size = stat.st_size
    etag = _etag(stat)
    mtime = int(stat.st_mtime)

    validators = {
        "Accept-Ranges": "bytes",
        "ETag": etag,
        "Last-Modified": http_date(stat.st_mtime),
    }
    # A carrier for the validators, so that a 304 built by Django repeats them.
    carrier = HttpResponse(headers=validators)
    conditional = get_conditional_response(
        request, etag=etag, last_modified=mtime, response=carrier
    )
    if conditional is not carrier and conditional is not None:
        handle.close()
        return conditional

    byte_range: tuple[int, int] | None = None
    header = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if (
        header
        and request.method == "GET"
        and (if_range is None or _if_range_allows(if_range, etag, mtime))
    ):
        try:
            byte_range = parse_range(header, size)
        except RangeNotSatisfiable:
            handle.close()
            refused = HttpResponse(status=416, headers=validators)
            refused["Content-Range"] = f"bytes */{size}"
            return refused

    response: HttpResponseBase
    if request.method == "HEAD":
        handle.close()
        response = HttpResponse(content_type=content_type, headers=validators)
        response["Content-Length"] = str(size)
    elif byte_range is None:
        # The response closes the file once the body has been sent.
        response = FileResponse(handle, content_type=content_type)
        # FileResponse would name the file after its stored name; only an explicit name is sent.
        if "Content-Disposition" in response:
            del response["Content-Disposition"]
        response["Content-Length"] = str(size)
    else:
        first, last = byte_range
        length = last - first + 1
        # Closed by the response, through _FileSlice.close, once the body has been sent.
        response = FileResponse(
            _FileSlice(handle, first, length), status=206, content_type=content_type
        )
        response["Content-Length"] = str(length)
        response["Content-Range"] = f"bytes {first}-{last}/{size}"

    for name, value in validators.items():
        response[name] = value
    if filename:
        response["Content-Disposition"] = _inline(filename)
    return response

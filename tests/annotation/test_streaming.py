"""Tests for annotation.media.streaming: Range parsing and the ranged file response (no database)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import RequestFactory
from django.utils.http import http_date
from pytest_django.fixtures import Settings

from annotation.media.streaming import RangeNotSatisfiable, parse_range, ranged_file_response

SIZE = 1000
DATA = bytes(range(256)) * 3 + bytes(range(232))  # 1000 bytes, each position recognisable
assert len(DATA) == SIZE

# ---------------------------------------------------------------------------------------------
# parse_range

# Closing a response sends Django's request_finished signal, whose handler checks the
# database connection; a connection left open by an earlier test needs database access.
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        # one range, in all three forms
        ("bytes=0-499", 1000, (0, 499)),
        ("bytes=500-999", 1000, (500, 999)),
        ("bytes=0-0", 1000, (0, 0)),
        ("bytes=999-999", 1000, (999, 999)),
        ("bytes=500-", 1000, (500, 999)),
        ("bytes=0-", 1000, (0, 999)),
        ("bytes=-200", 1000, (800, 999)),
        ("bytes=-1", 1000, (999, 999)),
        # the last position is clipped to the end; an oversized suffix means the whole file
        ("bytes=900-5000", 1000, (900, 999)),
        ("bytes=-5000", 1000, (0, 999)),
        # numbers of thousands of digits are positions past any file, not errors
        ("bytes=0-" + "9" * 5000, 1000, (0, 999)),
        ("bytes=-" + "9" * 5000, 1000, (0, 999)),
        ("bytes=" + "0" * 5000 + "7-8", 1000, (7, 8)),
        # tolerated spelling: unit case and blanks around the range
        ("Bytes=1-2", 1000, (1, 2)),
        ("bytes= 1-2 ", 1000, (1, 2)),
        # ignored: the whole file is served with 200
        (None, 1000, None),
        ("", 1000, None),
        ("bytes=", 1000, None),
        ("bytes=-", 1000, None),
        ("bytes=abc", 1000, None),
        ("bytes=1-2-3", 1000, None),
        ("bytes=+1-2", 1000, None),
        ("bytes=0x10-", 1000, None),
        ("bytes=5-1", 1000, None),
        ("bytes 0-10", 1000, None),
        ("items=0-10", 1000, None),
        ("bytes=0-1,5-6", 1000, None),
        ("bytes=0-1,", 1000, None),
    ],
)
def test_parse_range_table(header: str | None, size: int, expected: tuple[int, int] | None) -> None:
    assert parse_range(header, size) == expected


@pytest.mark.parametrize(
    ("header", "size"),
    [
        ("bytes=1000-", 1000),
        ("bytes=1000-1005", 1000),
        ("bytes=5000-", 1000),
        ("bytes=" + "9" * 5000 + "-", 1000),
        ("bytes=" + "9" * 5000 + "-" + "9" * 5001, 1000),
        ("bytes=-0", 1000),
        ("bytes=0-", 0),
        ("bytes=-5", 0),
    ],
)
def test_parse_range_refuses_ranges_outside_the_file(header: str, size: int) -> None:
    with pytest.raises(RangeNotSatisfiable):
        parse_range(header, size)


# ---------------------------------------------------------------------------------------------
# ranged_file_response

rf = RequestFactory()


@pytest.fixture
def media_file(tmp_path: Path) -> Path:
    path = tmp_path / "media" / "clips" / "c1.mp4"
    path.parent.mkdir(parents=True)
    path.write_bytes(DATA)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    return path


def body(response: HttpResponseBase) -> bytes:
    """The whole body, streamed or not; closes the response (and so the file) afterwards."""
    try:
        if isinstance(response, StreamingHttpResponse):
            return b"".join(response.streaming_content)  # type: ignore[arg-type]
        assert isinstance(response, HttpResponse)
        return response.content
    finally:
        response.close()


_served: list[HttpResponseBase] = []


@pytest.fixture(autouse=True)
def close_served_responses() -> Iterator[None]:
    """Close every response a test made, as Django's handler would, so no file stays open."""
    yield
    while _served:
        _served.pop().close()


def serve(path: Path, **headers: str) -> HttpResponseBase:
    """GET ``path`` through ranged_file_response with the given request headers."""
    response = ranged_file_response(
        rf.get("/media/c1", headers=headers), path, content_type="video/mp4"
    )
    _served.append(response)
    return response


def test_without_range_the_whole_file_is_streamed_with_200(media_file: Path) -> None:
    response = serve(media_file)

    assert response.status_code == 200
    assert response.streaming, "the file is streamed, not read into memory"
    assert isinstance(response, FileResponse)
    assert response["Content-Length"] == str(SIZE)
    assert response["Content-Type"] == "video/mp4"
    assert response["Accept-Ranges"] == "bytes"
    assert body(response) == DATA


def test_a_closed_range_gets_206_with_content_range_and_length(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=100-199")

    assert response.status_code == 206
    assert response["Content-Range"] == "bytes 100-199/1000"
    assert response["Content-Length"] == "100"
    assert response["Accept-Ranges"] == "bytes"
    assert body(response) == DATA[100:200]


def test_an_open_range_runs_to_the_end_of_the_file(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=900-")

    assert response.status_code == 206
    assert response["Content-Range"] == "bytes 900-999/1000"
    assert body(response) == DATA[900:]


def test_a_suffix_range_gets_the_last_bytes(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=-10")

    assert response.status_code == 206
    assert response["Content-Range"] == "bytes 990-999/1000"
    assert response["Content-Length"] == "10"
    assert body(response) == DATA[-10:]


def test_a_range_larger_than_the_streaming_block_is_sent_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.mp4"
    payload = os.urandom(200_000)
    big.write_bytes(payload)

    response = serve(big, Range="bytes=1-150000")

    assert body(response) == payload[1:150_001]


def test_a_range_past_the_end_gets_416_with_the_size(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=1000-")

    assert response.status_code == 416
    assert response["Content-Range"] == "bytes */1000"


@pytest.mark.parametrize("header", ["bytes=0-1,5-6", "bytes=7-3", "pages=1-2", "bytes=x-"])
def test_malformed_and_multi_range_headers_are_ignored_with_200(
    media_file: Path, header: str
) -> None:
    response = serve(media_file, Range=header)

    assert response.status_code == 200
    assert "Content-Range" not in response
    assert body(response) == DATA


def test_validators_are_sent_and_stable(media_file: Path) -> None:
    first, second = serve(media_file), serve(media_file, Range="bytes=0-1")

    assert first["ETag"] == second["ETag"]
    assert first["ETag"].startswith('"') and not first["ETag"].startswith("W/")
    assert first["Last-Modified"] == http_date(1_700_000_000)
    first.close()
    second.close()


def test_the_etag_changes_when_the_file_changes(media_file: Path) -> None:
    before = serve(media_file)["ETag"]
    media_file.write_bytes(DATA + b"more")

    assert serve(media_file)["ETag"] != before


def test_a_matching_if_none_match_gets_304_with_the_validators(media_file: Path) -> None:
    etag = serve(media_file)["ETag"]

    response = serve(media_file, **{"If-None-Match": etag})

    assert response.status_code == 304
    assert response["ETag"] == etag
    assert body(response) == b""


def test_a_stale_if_none_match_gets_the_file(media_file: Path) -> None:
    response = serve(media_file, **{"If-None-Match": '"something-else"'})

    assert response.status_code == 200


def test_if_modified_since_at_the_modification_time_gets_304(media_file: Path) -> None:
    response = serve(media_file, **{"If-Modified-Since": http_date(1_700_000_000)})

    assert response.status_code == 304


def test_if_modified_since_before_the_modification_gets_the_file(media_file: Path) -> None:
    response = serve(media_file, **{"If-Modified-Since": http_date(1_600_000_000)})

    assert response.status_code == 200


def test_if_range_with_the_current_etag_honours_the_range(media_file: Path) -> None:
    etag = serve(media_file)["ETag"]

    response = serve(media_file, Range="bytes=0-9", **{"If-Range": etag})

    assert response.status_code == 206
    assert body(response) == DATA[:10]


def test_if_range_with_an_old_etag_sends_the_whole_file(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=0-9", **{"If-Range": '"old-version"'})

    assert response.status_code == 200
    assert body(response) == DATA


def test_if_range_with_a_weak_etag_never_matches(media_file: Path) -> None:
    etag = serve(media_file)["ETag"]

    response = serve(media_file, Range="bytes=0-9", **{"If-Range": f"W/{etag}"})

    assert response.status_code == 200


def test_if_range_with_the_modification_date_honours_the_range(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=0-9", **{"If-Range": http_date(1_700_000_000)})

    assert response.status_code == 206


def test_if_range_with_another_date_sends_the_whole_file(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=0-9", **{"If-Range": http_date(1_600_000_000)})

    assert response.status_code == 200


def test_head_sends_headers_only_and_ignores_range(media_file: Path) -> None:
    request = rf.head("/media/c1", headers={"Range": "bytes=0-9"})

    response = ranged_file_response(request, media_file, content_type="video/mp4")

    assert response.status_code == 200
    assert response["Content-Length"] == str(SIZE)
    assert response["Accept-Ranges"] == "bytes"
    assert body(response) == b""


def test_no_file_name_is_sent_unless_asked(media_file: Path) -> None:
    plain = serve(media_file)
    named = ranged_file_response(
        rf.get("/media/c1", headers={"Range": "bytes=0-1"}),
        media_file,
        content_type="video/mp4",
        filename="clip 7.mp4",
    )

    assert "Content-Disposition" not in plain
    assert named["Content-Disposition"] == 'inline; filename="clip 7.mp4"'
    plain.close()
    named.close()


def test_a_missing_file_is_a_404(tmp_path: Path) -> None:
    with pytest.raises(Http404):
        serve(tmp_path / "nothing.mp4")


def test_x_accel_hands_the_file_to_nginx_with_an_empty_body(media_file: Path) -> None:
    root = media_file.parents[1]

    response = ranged_file_response(
        rf.get("/media/c1", headers={"Range": "bytes=0-9"}),
        media_file,
        content_type="video/mp4",
        x_accel_prefix="/protected-media/",
        media_root=root,
    )

    assert response.status_code == 200
    assert response["X-Accel-Redirect"] == "/protected-media/clips/c1.mp4"
    assert response["Content-Type"] == "video/mp4"
    assert body(response) == b""


def test_x_accel_quotes_unusual_file_names(tmp_path: Path) -> None:
    odd = tmp_path / "clips" / "été 1.mp4"
    odd.parent.mkdir()
    odd.write_bytes(b"x")

    response = ranged_file_response(
        rf.get("/m"), odd, content_type="video/mp4", x_accel_prefix="/p", media_root=tmp_path
    )

    assert response["X-Accel-Redirect"] == "/p/clips/%C3%A9t%C3%A9%201.mp4"


def test_x_accel_defaults_to_the_media_root_setting(media_file: Path, settings: Settings) -> None:
    settings.MEDIA_ROOT = media_file.parents[1]

    response = ranged_file_response(
        rf.get("/m"), media_file, content_type="video/mp4", x_accel_prefix="/protected-media"
    )

    assert response["X-Accel-Redirect"] == "/protected-media/clips/c1.mp4"


def test_x_accel_refuses_a_path_outside_the_media_root(tmp_path: Path, media_file: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("no")

    with pytest.raises(ValueError, match="outside the media root"):
        ranged_file_response(
            rf.get("/m"),
            outside,
            content_type="text/plain",
            x_accel_prefix="/p",
            media_root=media_file.parents[1],
        )


def test_closing_a_range_response_closes_the_file(media_file: Path) -> None:
    response = serve(media_file, Range="bytes=0-9")
    handle = response.file_to_stream._handle  # type: ignore[attr-defined]

    response.close()

    assert handle.closed


def test_a_range_response_offers_no_fileno_to_sendfile(media_file: Path) -> None:
    # A WSGI server's sendfile() would send from the offset to the end of the file, past the
    # range; without fileno() it falls back to reading the slice.
    response = serve(media_file, Range="bytes=0-9")

    assert not hasattr(response.file_to_stream, "fileno")  # type: ignore[attr-defined]
    response.close()


def test_a_failed_if_match_gets_412(media_file: Path) -> None:
    response = serve(media_file, **{"If-Match": '"another-version"'})

    assert response.status_code == 412


def test_a_directory_is_a_404(tmp_path: Path) -> None:
    with pytest.raises(Http404):
        serve(tmp_path)

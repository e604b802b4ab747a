"""Tests for annotation.media.video: probing, hashing, proxies, posters, synthetic clips.

Every clip here is tiny (a couple of seconds at 160x90) so the whole file runs in a few seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from annotation.media import video as media
from annotation.media.video import MediaError, ProbeResult

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs ffmpeg")

TINY = (160, 90)


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def tiny_clip(clip_dir: Path) -> Path:
    """A 2 s synthetic clip: H.264 yuv420p faststart mp4, no audio."""
    path = clip_dir / "tiny.mp4"
    media.synthesize_clip("moving_shapes", path, duration=2.0, size=TINY, fps=25)
    return path


@pytest.fixture(scope="module")
def odd_mkv_with_audio(clip_dir: Path) -> Path:
    """A 1.5 s Matroska file, 161x91, yuv444p, with a sine audio track."""
    path = clip_dir / "odd.mkv"
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=1.5",
        "-f", "lavfi", "-i", "sine=d=1.5",
        "-vf", "scale=161:91",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p", "-c:a", "aac",
        "-shortest", os.fspath(path),
    )  # fmt: skip
    return path


@pytest.fixture(scope="module")
def slow_start_mp4(clip_dir: Path) -> Path:
    """A 4 s mp4 written without faststart: its index (moov) sits after the media data."""
    path = clip_dir / "slow_start.mp4"
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=4",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", os.fspath(path),
    )  # fmt: skip
    return path


# ---------------------------------------------------------------------------------------------
# probe


def test_probe_describes_a_synthetic_clip(tiny_clip: Path) -> None:
    result = media.probe(tiny_clip)

    assert result == ProbeResult(
        duration=pytest.approx(2.0, abs=0.05),  # type: ignore[arg-type]
        fps=25.0,
        width=160,
        height=90,
        codec="h264",
        pix_fmt="yuv420p",
        container="mp4",
        has_audio=False,
    )


def test_probe_reports_container_audio_and_pixel_format_of_a_matroska_file(
    odd_mkv_with_audio: Path,
) -> None:
    result = media.probe(odd_mkv_with_audio)

    assert (result.container, result.has_audio, result.pix_fmt) == ("matroska", True, "yuv444p")
    assert (result.width, result.height) == (161, 91)


def test_probe_calls_a_text_file_not_a_video(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("Shot list: pan left, then cut to the lamp.\n")

    with pytest.raises(MediaError, match=r"^notes\.txt: not a video"):
        media.probe(notes)


def test_probe_calls_a_text_file_renamed_to_mp4_not_a_video(tmp_path: Path) -> None:
    fake = tmp_path / "fake.mp4"
    fake.write_text("this is not a movie, only text that ends in .mp4\n" * 20)

    with pytest.raises(MediaError, match=r"^fake\.mp4: not a video"):
        media.probe(fake)


def test_probe_says_an_audio_file_has_no_video_stream(tmp_path: Path) -> None:
    audio = tmp_path / "voice.m4a"
    ffmpeg("-f", "lavfi", "-i", "sine=d=0.5", os.fspath(audio))

    with pytest.raises(MediaError, match=r"^voice\.m4a: not a video \(no video stream\)$"):
        media.probe(audio)


def test_probe_calls_a_still_image_not_a_video(tmp_path: Path) -> None:
    image = tmp_path / "frame.jpg"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=s=64x36", "-frames:v", "1", os.fspath(image))

    with pytest.raises(MediaError, match=r"^frame\.jpg: not a video \(a still image\)$"):
        media.probe(image)


def test_probe_calls_an_empty_file_not_a_video(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.touch()

    with pytest.raises(MediaError, match=r"^empty\.mp4: not a video \(the file is empty\)$"):
        media.probe(empty)


def test_probe_says_a_missing_file_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match=r"^gone\.mp4: cannot be read \(no such file\)$"):
        media.probe(tmp_path / "gone.mp4")


def test_probe_says_permission_denied_in_plain_words(
    tiny_clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests may run as root, for whom chmod 000 changes nothing, so the refusal is simulated.
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(media, "open", refuse, raising=False)

    with pytest.raises(MediaError) as caught:
        media.probe(tiny_clip)
    assert str(caught.value) == "tiny.mp4: cannot be read (permission denied)"


def test_probe_calls_an_mp4_cut_before_its_index_truncated(
    slow_start_mp4: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "upload.mp4"
    cut.write_bytes(slow_start_mp4.read_bytes()[: slow_start_mp4.stat().st_size // 2])

    with pytest.raises(MediaError, match=r"^upload\.mp4: truncated or corrupt \(.*moov"):
        media.probe(cut)


def test_probe_calls_a_faststart_mp4_cut_short_truncated_although_it_probes(
    tiny_clip: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "clip.mp4"
    cut.write_bytes(tiny_clip.read_bytes()[: int(tiny_clip.stat().st_size * 0.6)])

    with pytest.raises(
        MediaError, match=r"^clip\.mp4: truncated or corrupt \(decoding failed at the end: .+\)$"
    ):
        media.probe(cut)


def test_media_error_survives_pickling() -> None:
    error = MediaError("/srv/media/clip.mp4", "truncated or corrupt (cut short)")

    copy = pickle.loads(pickle.dumps(error))

    assert (str(copy), copy.path, copy.reason) == (str(error), error.path, error.reason)


def test_probe_calls_a_matroska_file_cut_short_truncated(tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole.mkv", tmp_path / "cut.mkv"
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=3",
        "-c:v", "libx264", "-preset", "ultrafast", os.fspath(whole),
    )  # fmt: skip
    cut.write_bytes(whole.read_bytes()[: int(whole.stat().st_size * 0.6)])

    with pytest.raises(MediaError, match=r"^cut\.mkv: truncated or corrupt"):
        media.probe(cut)


@pytest.mark.parametrize(
    ("name", "encoder_args"),
    [
        # MPEG-TS has no keyframe index, and x264's default GOP is 10 s: the last second alone
        # holds no decodable frame.
        ("long_gop.ts", ["-c:v", "libx264", "-preset", "ultrafast"]),
        # Open GOP: frames after the seek point refer to frames before it and log errors.
        (
            "open_gop.mp4",
            ["-c:v", "libx264", "-preset", "ultrafast", "-x264-params",
             "open-gop=1:keyint=20:bframes=3"],
        ),
    ],
)  # fmt: skip
def test_probe_accepts_healthy_files_that_are_awkward_to_decode_from_the_end(
    tmp_path: Path, name: str, encoder_args: list[str]
) -> None:
    target = tmp_path / name
    ffmpeg("-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=3", *encoder_args, os.fspath(target))

    assert media.probe(target).duration == pytest.approx(3.0, abs=0.1)


# ---------------------------------------------------------------------------------------------
# sha256_file, is_faststart, needs_proxy


def test_sha256_file_matches_hashlib_across_chunk_boundaries(tmp_path: Path) -> None:
    data = os.urandom(10_000) * 3
    target = tmp_path / "blob.bin"
    target.write_bytes(data)

    assert media.sha256_file(target, chunk_size=4096) == hashlib.sha256(data).hexdigest()


def test_sha256_file_of_an_empty_file_is_the_empty_digest(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.touch()

    assert media.sha256_file(empty) == hashlib.sha256(b"").hexdigest()


def test_is_faststart_tells_where_the_index_is(
    tiny_clip: Path, slow_start_mp4: Path, odd_mkv_with_audio: Path
) -> None:
    assert media.is_faststart(tiny_clip) is True
    assert media.is_faststart(slow_start_mp4) is False
    assert media.is_faststart(odd_mkv_with_audio) is False


PLAYABLE = ProbeResult(
    duration=8.0, fps=25.0, width=640, height=360, codec="h264", pix_fmt="yuv420p",
    container="mp4", has_audio=False,
)  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, False),
        ({"container": "mov"}, False),
        ({"has_audio": True}, True),
        ({"codec": "hevc"}, True),
        ({"codec": "vp9", "container": "matroska"}, True),
        ({"container": "matroska"}, True),
        ({"container": "avi"}, True),
        ({"pix_fmt": "yuv420p10le"}, True),
        ({"pix_fmt": "yuv444p"}, True),
        ({"pix_fmt": "yuvj420p"}, True),
    ],
)
def test_needs_proxy_unless_h264_yuv420p_mp4_or_mov_without_audio(
    changes: dict[str, object], expected: bool
) -> None:
    probe = dataclasses.replace(PLAYABLE, **changes)  # type: ignore[arg-type]

    assert media.needs_proxy(probe) is expected


# ---------------------------------------------------------------------------------------------
# make_proxy, make_poster


def test_make_proxy_turns_an_odd_sized_file_with_audio_into_a_browser_ready_mp4(
    odd_mkv_with_audio: Path, tmp_path: Path
) -> None:
    proxy = tmp_path / "out" / "proxy.mp4"

    media.make_proxy(odd_mkv_with_audio, proxy)

    result = media.probe(proxy)
    assert (result.codec, result.pix_fmt, result.container) == ("h264", "yuv420p", "mp4")
    assert (result.width, result.height) == (160, 90)
    assert result.has_audio is False
    assert result.duration == pytest.approx(1.5, abs=0.1)
    assert media.needs_proxy(result) is False
    assert media.is_faststart(proxy) is True


def test_make_proxy_failure_names_the_file_and_quotes_ffmpeg(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a video\n")
    proxy = tmp_path / "proxy.mp4"

    with pytest.raises(
        MediaError, match=r"^notes\.txt: making the browser proxy failed \(ffmpeg: .+"
    ):
        media.make_proxy(notes, proxy)
    assert list(tmp_path.iterdir()) == [notes], "no proxy and no partial file is left behind"


def test_make_poster_writes_one_jpeg_frame(tiny_clip: Path, tmp_path: Path) -> None:
    poster = tmp_path / "poster.jpg"

    media.make_poster(tiny_clip, poster)

    data = poster.read_bytes()
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"


def test_the_poster_is_the_first_frame_even_when_blank(clip_dir: Path, tmp_path: Path) -> None:
    # 1.6 s of plain white, then a test card: the player shows white at 0.00 s, so must the poster.
    clip = clip_dir / "blank_opening.mp4"
    ffmpeg(
        "-f", "lavfi", "-i", "color=c=white:s=160x120:r=25:d=1.6",
        "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2.4",
        "-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", os.fspath(clip),
    )  # fmt: skip
    chosen, first, card = (tmp_path / name for name in ("chosen.jpg", "first.jpg", "card.jpg"))

    media.make_poster(clip, chosen)
    media.make_poster(clip, first, at_seconds=0.0)
    media.make_poster(clip, card, at_seconds=2.0)

    assert chosen.read_bytes() == first.read_bytes()
    assert chosen.read_bytes() != card.read_bytes()
    assert chosen.stat().st_size * 2 < card.stat().st_size  # white compresses to almost nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.jpg", "chosen.jpg", "first.jpg"]


def test_shot_changes_are_found_where_the_picture_cuts(clip_dir: Path) -> None:
    # Three shots: a test card for 2 s, plain blue for 1.6 s, then a Mandelbrot zoom.
    clip = clip_dir / "three_shots.mp4"
    ffmpeg(
        "-f", "lavfi", "-i", "testsrc2=s=160x120:r=25:d=2",
        "-f", "lavfi", "-i", "color=c=blue:s=160x120:r=25:d=1.6",
        "-f", "lavfi", "-i", "mandelbrot=s=160x120:r=25",
        "-filter_complex", "[2:v]trim=end_frame=40[m];[0:v][1:v][m]concat=n=3:v=1[v]",
        "-map", "[v]", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        os.fspath(clip),
    )  # fmt: skip

    assert media.detect_shot_changes(clip) == [2.0, 3.6]
    assert media.detect_shot_changes(clip, threshold=0.99) == [3.6]  # blue to fractal only


@pytest.mark.parametrize(
    ("kind", "expected"), [("hard_cut", [2.4]), ("camera_pan", []), ("zoom", [])]
)
def test_the_demo_cut_is_a_shot_change_and_camera_moves_are_not(
    kind: str, expected: list[float], clip_dir: Path
) -> None:
    path = clip_dir / f"shots-{kind}.mp4"
    media.synthesize_clip(kind, path, duration=4.0, size=(320, 180), fps=25)
    assert media.detect_shot_changes(path) == expected


def test_a_steady_shot_has_no_shot_changes(tiny_clip: Path) -> None:
    assert media.detect_shot_changes(tiny_clip) == []


def test_shot_change_detection_refuses_a_threshold_outside_0_to_1(tiny_clip: Path) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        media.detect_shot_changes(tiny_clip, threshold=1.5)


def test_shot_change_detection_of_a_file_that_is_not_a_video_names_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a video")
    with pytest.raises(MediaError, match=r"^notes\.txt: detecting shot changes failed"):
        media.detect_shot_changes(notes)


def test_make_poster_past_the_end_of_the_clip_fails(tiny_clip: Path, tmp_path: Path) -> None:
    poster = tmp_path / "poster.jpg"

    with pytest.raises(MediaError, match=r"^tiny\.mp4: making the poster failed"):
        media.make_poster(tiny_clip, poster, at_seconds=30)
    assert not poster.exists()


# ---------------------------------------------------------------------------------------------
# synthesize_clip


@pytest.mark.parametrize("kind", sorted(media.SYNTHETIC_KINDS))
def test_synthesize_clip_makes_a_muted_h264_mp4_of_the_asked_length_and_size(
    kind: str, tmp_path: Path
) -> None:
    target = tmp_path / f"{kind}.mp4"

    media.synthesize_clip(kind, target, duration=2.0, size=TINY, fps=10)

    result = media.probe(target)
    assert result.duration == pytest.approx(2.0, abs=0.05)
    assert (result.width, result.height, result.fps) == (160, 90, 10.0)
    assert (result.codec, result.pix_fmt, result.container, result.has_audio) == (
        "h264", "yuv420p", "mp4", False,
    )  # fmt: skip
    assert media.needs_proxy(result) is False


def test_synthesize_clip_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a.mp4", tmp_path / "b.mp4"

    media.synthesize_clip("counting", first, duration=1.4, size=TINY, fps=10, count=3)
    media.synthesize_clip("counting", second, duration=1.4, size=TINY, fps=10, count=3)

    assert media.sha256_file(first) == media.sha256_file(second)


def _scene_changes(path: Path) -> list[float]:
    """Times (s) where ffmpeg's scene detector sees a change of more than 40% of the picture."""
    result = subprocess.run(
        ["ffmpeg", "-nostdin", "-i", os.fspath(path),
         "-vf", "select='gt(scene,0.4)',showinfo", "-f", "null", "-"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [float(t) for t in re.findall(r"pts_time:([0-9.]+)", result.stderr)]


def test_synthesize_hard_cut_cuts_exactly_at_the_stated_time(tmp_path: Path) -> None:
    target = tmp_path / "cut.mp4"

    media.synthesize_clip("hard_cut", target, duration=3.0, size=TINY, fps=10, cut_at=1.8)

    assert _scene_changes(target) == [pytest.approx(1.8)]


def test_synthesize_hard_cut_defaults_to_a_cut_at_sixty_percent(tmp_path: Path) -> None:
    target = tmp_path / "cut.mp4"

    media.synthesize_clip("hard_cut", target, duration=2.0, size=TINY, fps=10)

    assert _scene_changes(target) == [pytest.approx(1.2)]


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [
        ("fireworks", {}),
        ("zoom", {"size": (161, 90)}),
        ("zoom", {"duration": 0}),
        ("hard_cut", {"cut_at": 5.0}),
        ("zoom", {"cut_at": 1.0}),
        ("counting", {"count": 0}),
    ],
)
def test_synthesize_clip_refuses_bad_arguments(
    kind: str, kwargs: dict[str, object], tmp_path: Path
) -> None:
    arguments: dict[str, object] = {"duration": 2.0, "size": TINY, **kwargs}

    with pytest.raises(ValueError):
        media.synthesize_clip(kind, tmp_path / "x.mp4", **arguments)  # type: ignore[arg-type]
    assert not (tmp_path / "x.mp4").exists()

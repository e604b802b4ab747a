"""Video files: probing, hashing, browser proxies, posters and synthetic demo clips.

Pure module: wraps the ``ffmpeg``/``ffprobe`` command-line tools (through ffmpeg-python for
probing) and imports nothing from Django, so ingest code, Celery tasks, management commands and
the benchmark can all share it.

Everything that can go wrong with a file a person uploaded is reported as :class:`MediaError`,
whose message names the file and says what is wrong in plain words, because that message ends up
in front of a researcher who has to decide what to do with the clip.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import ffmpeg

__all__ = [
    "PROXY_CRF",
    "PROXY_PRESET",
    "SHOT_CHANGE_THRESHOLD",
    "SYNTHETIC_KINDS",
    "MediaError",
    "ProbeResult",
    "detect_shot_changes",
    "is_faststart",
    "make_faststart_copy",
    "make_poster",
    "make_proxy",
    "needs_proxy",
    "probe",
    "sha256_file",
    "synthesize_clip",
]

StrPath = str | os.PathLike[str]

# How long the tail decode in probe() may take before we call the file unreadable. A healthy
# one-second decode takes well under a second even for 4K material.
_TAIL_CHECK_TIMEOUT_S = 60.0
# Stretches of the end decoded by probe(), tried in turn until one yields a frame: 1 s nearly
# always does; 20 s covers the longest keyframe interval encoders use by default (10 s).
_TAIL_WINDOWS_S = (1.0, 20.0)
# Containers that ffprobe reports for single pictures or text, which have a "video" stream but are
# not clips anyone can annotate.
_STILL_IMAGE_FORMATS = frozenset(
    {"image2", "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe", "tiff_pipe", "svg_pipe", "tty"}
)
_TEXT_CODECS = frozenset({"ansi", "text", "bintext", "xbin", "idf"})
# Errors a healthy open-GOP stream (some cameras, broadcast TS) can log when decoding starts at a
# seek point: frames right after the keyframe refer to frames before it. Not signs of damage.
_SEEK_ARTEFACT = re.compile(
    r"reference picture missing|missing reference picture|co located POCs unavailable"
    r"|Could not find ref with POC|mmco: unref short failure|number of reference frames",
    re.IGNORECASE,
)
# ffmpeg prefixes its log lines with "[h264 @ 0x55d1c...] ", which means nothing to a reader.
_LOG_PREFIX = re.compile(r"\[[^\]]* @ 0x[0-9a-fA-F]+\]\s*")


class MediaError(Exception):
    """A media file cannot be used; ``str(error)`` reads "<file name>: <reason>".

    ``path`` is the full path (for logs); the message carries only the file's base name, so it can
    be shown to users without revealing the server's directory layout.
    """

    def __init__(self, path: StrPath, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{os.path.basename(self.path)}: {reason}")

    def __reduce__(self) -> tuple[type[MediaError], tuple[str, str]]:
        # Rebuild from (path, reason), not from the message, so the error survives pickling
        # (Celery results, multiprocessing).
        return (type(self), (self.path, self.reason))


@dataclass(frozen=True)
class ProbeResult:
    """What the rest of Redline needs to know about a video file.

    ``container`` is ``"mp4"`` or ``"mov"`` for ISO-BMFF files (told apart by the major brand),
    otherwise ffprobe's first format name (``"matroska"``, ``"avi"``, ...). ``codec`` and
    ``pix_fmt`` are ffprobe's names for the first video stream (``"h264"``, ``"yuv420p"``).
    """

    duration: float
    fps: float
    width: int
    height: int
    codec: str
    pix_fmt: str
    container: str
    has_audio: bool


# --------------------------------------------------------------------------------------------
# Running the tools


def _tail(text: str, *, lines: int = 12, chars: int = 2000) -> str:
    """The last few meaningful lines of an ffmpeg log, without the "[codec @ 0x..]" noise."""
    cleaned = [_LOG_PREFIX.sub("", line).strip() for line in text.splitlines()]
    kept = [line for line in cleaned if line][-lines:]
    return "\n".join(kept)[-chars:]


def _run_ffmpeg(
    args: Sequence[str],
    *,
    path: StrPath,
    what: str,
    timeout: float | None,
    cwd: StrPath | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ffmpeg with ``args``; raise MediaError naming ``path`` and ``what`` on failure."""
    command = ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", *args]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=timeout, check=False,
            cwd=cwd,
        )
    except FileNotFoundError as exc:  # the binary itself is missing: a deployment problem
        raise MediaError(path, f"{what} failed (ffmpeg is not installed)") from exc
    except subprocess.TimeoutExpired as exc:
        raise MediaError(path, f"{what} failed (ffmpeg ran longer than {timeout:g} s)") from exc
    if result.returncode != 0:
        # ffmpeg quotes input paths in full; the message shows only the file name (see MediaError).
        log = result.stderr.replace(os.fspath(path), os.path.basename(os.fspath(path)))
        detail = _tail(log) or f"exit status {result.returncode}"
        raise MediaError(path, f"{what} failed (ffmpeg: {detail})")
    return result


def _temp_output(dst: Path) -> Path:
    """An unused path next to ``dst`` for ffmpeg to write to before the final rename.

    Same directory, so os.replace() is atomic and readers never see a half-written file. The
    file is left for ffmpeg to create, so it gets the usual umask permissions (mkstemp's 0600
    would hide proxies from a web server running as another user).
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    return dst.parent / f".{dst.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.part"


def _ffmpeg_write(dst: Path, args_for: Callable[[Path], list[str]], *, path: Path, what: str,
                  timeout: float | None) -> None:
    """Run ffmpeg with ``args_for(tmp)``, which writes to a temporary name beside ``dst``; rename
    it to ``dst`` once whole, so that ``dst`` appears only when complete. ``path`` and ``what``
    name the work in a MediaError."""
    tmp = _temp_output(dst)
    try:
        _run_ffmpeg(args_for(tmp), path=path, what=what, timeout=timeout)
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise MediaError(path, f"{what} failed (ffmpeg wrote nothing)")
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# Probing


def _check_readable(path: Path) -> bytes:
    """Return the first bytes of ``path``; raise MediaError if it cannot be opened or is empty."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except FileNotFoundError as exc:
        raise MediaError(path, "cannot be read (no such file)") from exc
    except IsADirectoryError as exc:
        raise MediaError(path, "cannot be read (it is a directory)") from exc
    except PermissionError as exc:
        raise MediaError(path, "cannot be read (permission denied)") from exc
    except OSError as exc:
        raise MediaError(path, f"cannot be read ({exc.strerror or exc})") from exc
    if not head:
        raise MediaError(path, "not a video (the file is empty)")
    return head


def _looks_like_iso_bmff(head: bytes) -> bool:
    """True when the file starts like an MP4/MOV (an ``ftyp`` or other well-known top box)."""
    return len(head) >= 8 and head[4:8] in {b"ftyp", b"moov", b"mdat", b"free", b"wide", b"skip"}


def _fraction(text: str | None) -> float:
    """ffprobe's "30000/1001" as a float; 0.0 for missing or "0/0"."""
    if not text:
        return 0.0
    num, _, den = text.partition("/")
    try:
        value = float(num) / float(den) if den else float(num)
    except (ValueError, ZeroDivisionError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def _float(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0


def _container_name(fmt: dict[str, object]) -> str:
    names = str(fmt.get("format_name") or "").split(",")
    if "mp4" in names or "mov" in names:
        tags = fmt.get("tags") or {}
        brand = str(tags.get("major_brand", "") if isinstance(tags, dict) else "").strip()
        # QuickTime files carry the "qt  " brand; everything else in the family is played as mp4.
        return "mov" if brand == "qt" else "mp4"
    return names[0] or "unknown"


def _ffprobe(path: Path, head: bytes) -> dict[str, object]:
    try:
        return ffmpeg.probe(os.fspath(path))  # type: ignore[no-any-return]
    except ffmpeg.Error as exc:
        stderr = (exc.stderr or b"").decode("utf-8", "replace")
        if "moov atom not found" in stderr and _looks_like_iso_bmff(head):
            # An MP4 whose index was to be written at the end: the upload or recording stopped
            # before it got there.
            raise MediaError(
                path, "truncated or corrupt (the MP4 index, the moov atom, is missing)"
            ) from exc
        if "Invalid data found" in stderr or "moov atom not found" in stderr:
            raise MediaError(path, "not a video (ffprobe does not recognise the format)") from exc
        if "Permission denied" in stderr:
            raise MediaError(path, "cannot be read (permission denied)") from exc
        raise MediaError(path, f"cannot be read (ffprobe: {_tail(stderr, lines=2)})") from exc
    except FileNotFoundError as exc:
        raise MediaError(path, "cannot be read (ffprobe is not installed)") from exc
    except json.JSONDecodeError as exc:
        raise MediaError(path, "cannot be read (ffprobe gave no usable answer)") from exc


def _decode_tail(path: Path, seconds: float) -> int:
    """Decode the last ``seconds`` of the first video stream; return how many frames came out.

    Raises MediaError when ffmpeg reports a decode or demux error on the way.
    """
    command = [
        "ffmpeg", "-nostdin", "-hide_banner", "-nostats", "-v", "error",
        "-progress", "pipe:1", "-sseof", f"-{seconds:.3f}", "-i", os.fspath(path),
        "-map", "0:v:0", "-an", "-sn", "-dn", "-f", "null", "-",
    ]  # fmt: skip
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_TAIL_CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise MediaError(
            path, "truncated or corrupt (decoding the end did not finish in time)"
        ) from exc
    except FileNotFoundError as exc:
        raise MediaError(path, "cannot be read (ffmpeg is not installed)") from exc
    # With "-v error" a healthy file prints nothing on stderr; any other line is a decode or demux
    # error. "Last message repeated" lines only echo the line before them.
    log = "\n".join(
        line
        for line in result.stderr.splitlines()
        if not _SEEK_ARTEFACT.search(line) and "Last message repeated" not in line
    )
    errors = _tail(log, lines=2, chars=300)
    if result.returncode != 0 or errors:
        detail = errors.replace("\n", "; ") or f"exit status {result.returncode}"
        raise MediaError(path, f"truncated or corrupt (decoding failed at the end: {detail})")
    frames = re.findall(r"^frame=(\d+)", result.stdout, flags=re.M)
    return int(frames[-1]) if frames else 0


def _check_tail_decodes(path: Path, duration: float) -> None:
    """Decode the end of the first video stream; raise MediaError if that fails.

    A file cut short after its index was written (faststart MP4, Matroska) still probes with the
    full duration; only decoding shows the missing data. The last second is the part most likely
    to be missing and is cheap to decode. Formats without a keyframe index (MPEG-TS) seek to an
    arbitrary frame, and with a long GOP no frame of the last second is decodable on its own, so
    when the last second yields nothing a longer stretch is tried before calling the file broken.
    """
    tried: set[float] = set()
    for seconds in _TAIL_WINDOWS_S:
        window = min(seconds, duration) if duration > 0 else seconds
        if window in tried:
            break
        tried.add(window)
        if _decode_tail(path, window) > 0:
            return
    raise MediaError(path, "truncated or corrupt (no frame could be decoded at the end)")


def probe(path: StrPath) -> ProbeResult:
    """Describe the video at ``path``, or raise MediaError saying why it is unusable.

    Refuses files that cannot be read, that are not videos (no video stream, a still image,
    text), and files that are truncated or corrupt: besides ffprobe's header check, the last
    second is decoded, because a truncated file can still report a full duration. Costs one
    ffprobe run plus the decode of about one second of video.
    """
    # Absolute paths keep ffmpeg from reading a leading '-' as an option or 'name:' as a
    # protocol; the same applies to every path handed to ffmpeg below.
    path = Path(path).absolute()
    head = _check_readable(path)
    info = _ffprobe(path, head)
    fmt = info.get("format") or {}
    streams = info.get("streams") or []
    if not isinstance(fmt, dict) or not isinstance(streams, list):
        raise MediaError(path, "cannot be read (ffprobe gave no usable answer)")

    video = [
        s
        for s in streams
        if s.get("codec_type") == "video"
        # Cover art in music files is a "video" stream holding one picture.
        and not (s.get("disposition") or {}).get("attached_pic")
        and s.get("codec_name") not in _TEXT_CODECS
    ]
    if not video:
        raise MediaError(path, "not a video (no video stream)")
    if str(fmt.get("format_name", "")).split(",")[0] in _STILL_IMAGE_FORMATS:
        raise MediaError(path, "not a video (a still image)")
    stream = video[0]

    duration = _float(fmt.get("duration")) or _float(stream.get("duration"))
    if duration <= 0:
        raise MediaError(path, "not a video (it has no duration)")
    fps = _fraction(stream.get("avg_frame_rate")) or _fraction(stream.get("r_frame_rate"))
    width, height = int(stream.get("width") or 0), int(stream.get("height") or 0)
    if width <= 0 or height <= 0:
        raise MediaError(path, "not a video (the video stream has no picture size)")

    _check_tail_decodes(path, duration)
    return ProbeResult(
        duration=duration,
        fps=fps,
        width=width,
        height=height,
        codec=str(stream.get("codec_name") or ""),
        pix_fmt=str(stream.get("pix_fmt") or ""),
        container=_container_name(fmt),
        has_audio=any(s.get("codec_type") == "audio" for s in streams),
    )


def sha256_file(path: StrPath, *, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 of the file's bytes, read in ``chunk_size`` pieces (memory stays flat)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def is_faststart(path: StrPath) -> bool:
    """True when an MP4/MOV file's ``moov`` box comes before its ``mdat`` box.

    Walks only the top-level box headers (a few reads). False when moov follows mdat, when either
    is missing, or when the file is not ISO-BMFF.
    """
    with open(path, "rb") as handle:
        size_total = os.fstat(handle.fileno()).st_size
        offset = 0
        while offset + 8 <= size_total:
            handle.seek(offset)
            header = handle.read(16)
            box_size = int.from_bytes(header[0:4], "big")
            box_type = header[4:8]
            if box_size == 1 and len(header) >= 16:  # 64-bit "largesize" follows the type
                box_size = int.from_bytes(header[8:16], "big")
            elif box_size == 0:  # box runs to the end of the file
                box_size = size_total - offset
            if box_type == b"moov":
                return True
            if box_type == b"mdat" or box_size < 8:
                return False
            offset += box_size
    return False


def needs_proxy(probe: ProbeResult) -> bool:
    """True unless the file can be served to browsers as it is.

    Served as is only when it is H.264 in 8-bit 4:2:0 (``yuv420p``, the one pixel format every
    browser decodes), in an MP4 or MOV container, with no audio track: clips are played muted, and
    an audio track would still be downloaded and would keep the original's sound reachable to
    anyone with the file URL.

    Faststart (``moov`` before ``mdat``) is not part of this test: a file that only lacks it is
    copied with its index moved to the front (:func:`make_faststart_copy`, no re-encoding), so
    that every served file shows its first frame from the first range request's bytes instead of
    sending the browser to the end of the file for the index first.
    """
    return not (
        probe.codec == "h264"
        and probe.pix_fmt == "yuv420p"
        and probe.container in {"mp4", "mov"}
        and not probe.has_audio
    )


# --------------------------------------------------------------------------------------------
# Proxies and posters

# libx264 settings for proxies. "veryfast" keeps transcodes faster than real time on a couple of
# cores; CRF 23 is x264's default quality, visually clean for annotation at modest size. A
# keyframe every second keeps scrubbing and frame-accurate seeking in the player snappy.
PROXY_PRESET = "veryfast"
PROXY_CRF = 23
PROXY_KEYFRAME_EXPR = "expr:gte(t,n_forced*1)"


def make_proxy(src: StrPath, dst: StrPath, *, timeout: float | None = None) -> None:
    """Write a browser-playable copy of ``src`` to ``dst``; raise MediaError on failure.

    The proxy is H.264 (libx264) in yuv420p with even dimensions (odd ones are trimmed by one
    pixel), MP4 with ``+faststart``, no audio, subtitle or data streams, no source metadata.
    Timestamps are kept, so times annotated on the proxy are times in the original. ``dst``
    appears only when complete (written next to it, then renamed).
    """
    src, dst = Path(src).absolute(), Path(dst).absolute()
    _check_readable(src)

    def args_for(tmp: Path) -> list[str]:
        stream = (
            ffmpeg.input(os.fspath(src))
            .video.filter("scale", "trunc(iw/2)*2", "trunc(ih/2)*2")
            .filter("format", "yuv420p")
            .output(
                os.fspath(tmp),
                format="mp4",
                vcodec="libx264",
                preset=PROXY_PRESET,
                crf=PROXY_CRF,
                pix_fmt="yuv420p",
                force_key_frames=PROXY_KEYFRAME_EXPR,
                movflags="+faststart",
                map_metadata=-1,
                an=None,
                sn=None,
                dn=None,
            )
            .overwrite_output()
        )
        # compile() gives ["ffmpeg", ...]; _run_ffmpeg adds its own binary name and log options.
        return ffmpeg.compile(stream)[1:]

    _ffmpeg_write(dst, args_for, path=src, what="making the browser proxy", timeout=timeout)


def make_faststart_copy(src: StrPath, dst: StrPath, *, timeout: float | None = None) -> None:
    """Write to ``dst`` the video stream of ``src`` unchanged (no re-encoding: the same frames
    and timestamps) in an MP4 whose index comes first; raise MediaError on failure.

    For a browser-playable file that was written without ``+faststart``. Like :func:`make_proxy`,
    it drops audio, subtitle and data streams and the source's metadata, and ``dst`` appears only
    when complete.
    """
    src, dst = Path(src).absolute(), Path(dst).absolute()
    _check_readable(src)
    _ffmpeg_write(dst, lambda tmp: [
        "-i", os.fspath(src), "-map", "0:v:0", "-c", "copy", "-map_metadata", "-1",
        "-movflags", "+faststart", "-f", "mp4", "-y", os.fspath(tmp),
    ], path=src, what="moving the video's index to the front", timeout=timeout)


def make_poster(
    src: StrPath, dst: StrPath, at_seconds: float = 0.0, *, timeout: float | None = 120
) -> None:
    """Write one JPEG frame of ``src`` to ``dst``; raise MediaError on failure.

    The frame is the one shown at ``at_seconds``, by default the first frame: the poster is what
    the player shows before it plays, at 0.00 s, so it must be the frame at 0.00 s. Asking for a
    time past the end is an error.
    """
    src, dst = Path(src).absolute(), Path(dst).absolute()
    _check_readable(src)
    if at_seconds < 0 or not math.isfinite(at_seconds):
        raise ValueError(f"at_seconds must be a time in the clip, got {at_seconds!r}")
    frame = _temp_output(dst)
    try:
        _grab_frame(src, frame, at_seconds, timeout=timeout)
        os.replace(frame, dst)
    finally:
        frame.unlink(missing_ok=True)


#: ffmpeg's scene-change score (0..1) above which a frame starts a new shot, by default.
SHOT_CHANGE_THRESHOLD = 0.3

_PTS_TIME = re.compile(r"pts_time:\s*(-?[0-9.]+(?:e-?[0-9]+)?)")


def detect_shot_changes(
    src: StrPath, threshold: float = SHOT_CHANGE_THRESHOLD, *, timeout: float | None = 600
) -> list[float]:
    """Return the times (seconds, rounded to the millisecond, ascending) where a new shot starts.

    A frame starts a new shot when ffmpeg's scene-change score against the frame before it is
    above ``threshold`` (``select='gt(scene,T)'``); the first frame never counts. The threshold
    must lie strictly between 0 and 1. Raises MediaError when ffmpeg cannot read the video.
    """
    if not 0 < threshold < 1:
        raise ValueError(f"the shot-change threshold must be between 0 and 1, got {threshold!r}")
    src = Path(src).absolute()
    _check_readable(src)
    with tempfile.TemporaryDirectory(prefix="redline-shots-") as folder:
        # Why a file rather than showinfo's log: the scores are printed whatever the log level.
        # ffmpeg runs in the scratch folder so that the file's name needs no filter-graph escaping.
        graph = f"select='gt(scene,{threshold:.4f})',metadata=print:file=scores.txt"
        args = ["-i", os.fspath(src), "-map", "0:v:0", "-an", "-sn", "-dn", "-vf", graph,
                "-f", "null", "-"]  # fmt: skip
        _run_ffmpeg(args, path=src, what="detecting shot changes", timeout=timeout, cwd=folder)
        scores = Path(folder) / "scores.txt"
        text = scores.read_text() if scores.exists() else ""
    times = {round(float(match), 3) for match in _PTS_TIME.findall(text)}
    return sorted(t for t in times if t > 0)


def _grab_frame(src: Path, out: Path, at_seconds: float, *, timeout: float | None) -> None:
    """Write the frame of ``src`` at ``at_seconds`` to ``out`` as a JPEG."""
    args = [
        "-y", "-ss", f"{at_seconds:.3f}", "-i", os.fspath(src),
        "-map", "0:v:0", "-frames:v", "1", "-an", "-sn", "-dn",
        "-c:v", "mjpeg", "-q:v", "3", "-f", "image2", "-update", "1", os.fspath(out),
    ]  # fmt: skip
    _run_ffmpeg(args, path=src, what="making the poster", timeout=timeout)
    if not out.exists() or out.stat().st_size == 0:
        raise MediaError(src, f"making the poster failed (no frame at {at_seconds:.2f} s)")


# --------------------------------------------------------------------------------------------
# Synthetic clips for the demo study

#: What each synthetic kind shows; demo captions are written against these descriptions.
#: Times are in seconds from the start; D is the clip duration.
SYNTHETIC_KINDS: dict[str, str] = {
    "moving_shapes": (
        "Static camera. Dark navy background with a light grey floor strip along the bottom. "
        "A red square slides from the left edge to the right edge along the upper part of the "
        "frame during the first half (0 to D/2) and stays parked at the right edge; at D/2 a "
        "teal bar appears at the right of the lower part and slides to the left edge by the end."
    ),
    "camera_pan": (
        "The camera pans steadily from left to right across a static landscape: blue sky, green "
        "wavy hills, a tall red pillar, then a yellow square, then a dark blue block. Nothing in "
        "the world moves; the objects drift right-to-left through the frame only because of the "
        "pan. The pillar leaves the frame at about 0.26 D, the yellow square crosses the frame "
        "between about 0.2 D and 0.77 D, the blue block enters at about 0.67 D."
    ),
    "hard_cut": (
        "Two shots joined by a hard cut at cut_at (default 0.6 D). Shot 1: green field, a yellow "
        "square moving slowly to the right across the middle. Shot 2: dark slate background, a "
        "magenta square falling from the top edge to the bottom edge. Static camera in both."
    ),
    "zoom": (
        "A still picture, static in the world, with the camera zooming in steadily to 2.5x: a "
        "cream wall with a target of nested squares (blue, white, red centre) and four small "
        "black squares near the corners, which leave the frame as the zoom tightens."
    ),
    "static_tripod": (
        "Static camera on a grey room: a pale window in the upper left, a brown table along the "
        "bottom, a small yellow lamp on the table that is lit for 1 s and dark for 1 s, "
        "starting lit at 0 (lit during [0,1), [2,3), [4,5), ...)."
    ),
    "counting": (
        "Static camera, white background. ``count`` blue squares (default 5) appear one at a "
        "time in a row from left to right, the k-th (k = 1..count) at k * D / (count + 2) "
        "seconds, and all stay until the end."
    ),
}


def _even(value: float) -> int:
    """Nearest even integer >= 2 (x264 in 4:2:0 needs even sizes)."""
    return max(2, int(round(value / 2.0)) * 2)


def _synth_graph(
    kind: str,
    *,
    duration: float,
    width: int,
    height: int,
    fps: int,
    frames: int,
    cut_at: float | None,
    count: int | None,
) -> str:
    """The lavfi filtergraph (output label ``[v]``) for one synthetic kind."""
    # Short upper-case names, as in the SYNTHETIC_KINDS descriptions, keep the graphs readable.
    W, H, D = width, height, duration
    rate = f"r={fps}"

    if kind == "moving_shapes":
        sq = _even(H / 6)
        bar_w, bar_h = _even(W / 5), _even(H / 9)
        half = D / 2
        return (
            f"color=c=0x1b2a41:s={W}x{H}:{rate},"
            f"drawbox=x=0:y={_even(H * 0.88)}:w={W}:h={H}:color=0xbfbfbf:t=fill[bg];"
            f"color=c=0xd62828:s={sq}x{sq}:{rate}[red];"
            f"color=c=0x2a9d8f:s={bar_w}x{bar_h}:{rate}[bar];"
            f"[bg][red]overlay=x='min(t/{half},1)*({W}-{sq})':y={_even(H * 0.22)}"
            f":eval=frame:shortest=1[s1];"
            f"[s1][bar]overlay=x='({W}-{bar_w})*(1-min(max(t-{half},0)/{half},1))'"
            f":y={_even(H * 0.66)}:enable='gte(t,{half})':eval=frame:shortest=1,"
            f"format=yuv420p[v]"
        )

    if kind == "camera_pan":
        cw = 3 * W
        # Hills: everything below a wavy horizon is green with a diagonal texture, above is sky.
        horizon = f"gt(Y,H*0.62+{H * 0.06:.2f}*sin(X/{W * 0.15:.2f})+{H * 0.03:.2f}*sin(X/23))"
        land = (
            f"geq=r='if({horizon},40+20*sin(X/7),110+Y*{90 / H:.5f})'"
            f":g='if({horizon},120+25*sin(X/11+Y/5),170+Y*{72 / H:.5f})'"
            f":b='if({horizon},45,235)'"
        )
        boxes = [
            (0.47 * W, 0.22 * H, 0.0625 * W, 0.56 * H, "0xd62828"),  # red pillar
            (1.40 * W, 0.42 * H, 0.14 * W, 0.25 * H, "0xf6c90e"),  # yellow square
            (2.35 * W, 0.33 * H, 0.25 * W, 0.33 * H, "0x1d4e89"),  # dark blue block
        ]
        draw = ",".join(
            f"drawbox=x={_even(x)}:y={_even(y)}:w={_even(w)}:h={_even(h)}:color={c}:t=fill"
            for x, y, w, h, c in boxes
        )
        return (
            f"color=c=black:s={cw}x{H}:{rate},trim=end_frame=1,format=rgb24,{land},{draw},"
            # Freeze that single rendered frame and give the copies running timestamps.
            f"loop=loop=-1:size=1,setpts=N/{fps}/TB,"
            f"crop=w={W}:h={H}:x='({cw}-{W})*min(t/{D},1)':y=0,format=yuv420p[v]"
        )

    if kind == "hard_cut":
        assert cut_at is not None
        first = int(round(cut_at * fps))
        second = frames - first
        sq = _even(H / 6)
        return (
            f"color=c=0x6a994e:s={W}x{H}:{rate}[fa];"
            f"color=c=0xf6c90e:s={sq}x{sq}:{rate}[ya];"
            f"[fa][ya]overlay=x='{W * 0.1:.1f}+t*{W * 0.5 / max(cut_at, 1e-3):.3f}'"
            f":y={_even(H / 2 - sq / 2)}:eval=frame:shortest=1,"
            f"trim=end_frame={first},setpts=PTS-STARTPTS[a];"
            f"color=c=0x2b2d42:s={W}x{H}:{rate}[fb];"
            f"color=c=0xd81b60:s={sq}x{sq}:{rate}[mb];"
            f"[fb][mb]overlay=x={_even(W / 2 - sq / 2)}"
            f":y='-{sq}+t*{(H + sq) / max(D - cut_at, 1e-3):.3f}':eval=frame:shortest=1,"
            f"trim=end_frame={second},setpts=PTS-STARTPTS[b];"
            f"[a][b]concat=n=2:v=1:a=0,format=yuv420p[v]"
        )

    if kind == "zoom":
        # Draw the still at twice the output size so the zoom stays smooth at pixel level.
        sw, sh = 2 * W, 2 * H
        cx, cy = sw / 2, sh / 2
        target = [
            (0.36 * sh, "0x1d4e89"),
            (0.24 * sh, "white"),
            (0.12 * sh, "0xd62828"),
        ]
        layers = [
            f"drawbox=x={_even(cx - s / 2)}:y={_even(cy - s / 2)}:w={_even(s)}:h={_even(s)}"
            f":color={c}:t=fill"
            for s, c in target
        ]
        corner = _even(0.06 * sh)
        for fx, fy in [(0.08, 0.1), (0.88, 0.1), (0.08, 0.84), (0.88, 0.84)]:
            layers.append(
                f"drawbox=x={_even(fx * sw)}:y={_even(fy * sh)}:w={corner}:h={corner}"
                f":color=black:t=fill"
            )
        last = max(frames - 1, 1)
        return (
            f"color=c=0xf1e9da:s={sw}x{sh}:{rate},trim=end_frame=1,{','.join(layers)},"
            f"zoompan=z='1+1.5*on/{last}':d={frames}"
            f":x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':s={W}x{H}:fps={fps},"
            f"format=yuv420p[v]"
        )

    if kind == "static_tripod":
        lamp = _even(H / 12)
        table_y = _even(H * 0.72)
        return (
            f"color=c=0x8d99ae:s={W}x{H}:{rate},"
            f"drawbox=x={_even(W * 0.08)}:y={_even(H * 0.1)}:w={_even(W * 0.25)}"
            f":h={_even(H * 0.3)}:color=0xe9f1f7:t=fill,"
            f"drawbox=x=0:y={table_y}:w={W}:h={H}:color=0x7f5539:t=fill,"
            f"drawbox=x={_even(W * 0.62)}:y={table_y - lamp}:w={lamp}:h={lamp}"
            f":color=0xffd60a:t=fill:enable='lt(mod(t,2),1)',"
            f"format=yuv420p[v]"
        )

    if kind == "counting":
        assert count is not None
        step = D / (count + 2)
        side = _even(min(W / (count * 1.6 + 1), H / 4))
        gap = (W - count * side) / (count + 1)
        draw = ",".join(
            f"drawbox=x={_even(gap + k * (side + gap))}:y={_even(H / 2 - side / 2)}"
            f":w={side}:h={side}:color=0x1d4e89:t=fill:enable='gte(t,{(k + 1) * step:.6f})'"
            for k in range(count)
        )
        return f"color=c=white:s={W}x{H}:{rate},{draw},format=yuv420p[v]"

    raise ValueError(f"unknown synthetic kind {kind!r}; expected one of {sorted(SYNTHETIC_KINDS)}")


def synthesize_clip(
    kind: str,
    dst: StrPath,
    *,
    duration: float,
    size: tuple[int, int] = (640, 360),
    fps: int = 25,
    cut_at: float | None = None,
    count: int | None = None,
    timeout: float | None = 300,
) -> None:
    """Generate a synthetic demo clip of ``kind`` (see :data:`SYNTHETIC_KINDS`) at ``dst``.

    Output: ``round(duration * fps)`` frames of ``size`` (even width and height), H.264 yuv420p,
    faststart MP4, no audio, no metadata; byte-identical for identical arguments on the same
    ffmpeg build. No network or input files needed. ``cut_at`` applies to ``hard_cut`` only
    (seconds, default 60% of the duration, rounded to a frame), ``count`` to ``counting`` only
    (default 5). Raises ValueError for bad arguments and MediaError if ffmpeg fails.
    """
    if kind not in SYNTHETIC_KINDS:
        raise ValueError(
            f"unknown synthetic kind {kind!r}; expected one of {sorted(SYNTHETIC_KINDS)}"
        )
    width, height = size
    if width <= 0 or height <= 0 or width % 2 or height % 2:
        raise ValueError(f"size must be positive and even, got {size!r}")
    if not (isinstance(fps, int) and 1 <= fps <= 120):
        raise ValueError(f"fps must be a whole number from 1 to 120, got {fps!r}")
    if not (0 < duration <= 600):
        raise ValueError(f"duration must be in (0, 600] seconds, got {duration!r}")
    frames = int(round(duration * fps))
    if frames < 2:
        raise ValueError(f"duration {duration} s at {fps} fps gives fewer than 2 frames")
    if cut_at is not None and kind != "hard_cut":
        raise ValueError("cut_at applies to the 'hard_cut' kind only")
    if count is not None and kind != "counting":
        raise ValueError("count applies to the 'counting' kind only")
    if kind == "hard_cut":
        cut_at = round((0.6 * duration if cut_at is None else cut_at) * fps) / fps
        if not (0 < cut_at < duration):
            raise ValueError(f"cut_at must fall inside the clip (0, {duration}), got {cut_at}")
    if kind == "counting":
        count = 5 if count is None else count
        if not (1 <= count <= 20):
            raise ValueError(f"count must be from 1 to 20, got {count}")

    graph = _synth_graph(
        kind, duration=duration, width=width, height=height, fps=fps, frames=frames,
        cut_at=cut_at, count=count,
    )  # fmt: skip
    dst = Path(dst).absolute()
    tmp = _temp_output(dst)
    args = [
        "-y", "-filter_complex", graph, "-map", "[v]", "-frames:v", str(frames), "-an",
        "-c:v", "libx264", "-preset", "veryfast", "-crf", "26", "-pix_fmt", "yuv420p",
        # One keyframe a second for scrubbing; bitexact and no metadata so that the same
        # arguments give the same bytes (demo fixtures can be checked by hash).
        "-g", str(fps), "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1",
        "-movflags", "+faststart", "-f", "mp4", os.fspath(tmp),
    ]  # fmt: skip
    try:
        _run_ffmpeg(args, path=dst, what=f"synthesising a {kind} clip", timeout=timeout)
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)

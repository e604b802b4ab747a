"""The Video-LLM judge: frames of the clip, the caption and the taxonomy sent to an
OpenAI-compatible vision endpoint, which answers (schema-constrained) the defects it finds per
window and mode. The score is the number of defects: fewer is better.

This is the control row "Video-LLM judge, fewer defects" of the paper's Table 1 (AUC 0.558
there): a judge that watches the video but is given no human reference.

- **Frames**: ffmpeg samples the clip at ``rate`` frames per second (at most ``max_frames``,
  evenly thinned), scaled to ``width`` pixels wide, as JPEG; each frame is sent as an image
  part with its time ("frame at 3.0 s").
- **Request**: one chat completion, temperature 0, with ``response_format`` a JSON schema
  (``{"defects": [{"window": int|null, "mode": one of the taxonomy's keys, "what": str}]}``);
  ``window`` is the 1-based window number, null for the overview.
- **Answer**: parsed and checked against the schema (an unknown mode or window is an error,
  never silently dropped). The version of the method (:data:`METHOD_VERSION`) is recorded with
  every score, with the rate and the model.

Pure Python (urllib, subprocess): no Django.
"""

from __future__ import annotations

import base64
import json
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METHOD_VERSION = "video-judge-1"


class VideoJudgeError(RuntimeError):
    """The frames could not be taken, the server failed, or its answer broke the schema."""


@dataclass(frozen=True)
class Frame:
    seconds: float
    jpeg: bytes


@dataclass(frozen=True)
class Defect:
    window: int | None
    mode: str
    what: str


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key: str = ""
    rate: float = 0.5
    max_frames: int = 16
    width: int = 448
    timeout_s: float = 300.0

    @property
    def version(self) -> str:
        """What the stored score's version says: the method, the rate, the frame cap."""
        return f"{METHOD_VERSION}+{self.rate:g}fps+max{self.max_frames}"


def sample_frames(video: str | Path, *, rate: float, max_frames: int, width: int = 448
                  ) -> list[Frame]:
    """Return frames of ``video`` at ``rate`` per second (thinned evenly to ``max_frames``)."""
    if rate <= 0 or max_frames < 1:
        raise ValueError("rate must be > 0 and max_frames >= 1")
    with tempfile.TemporaryDirectory(prefix="redline-frames-") as folder:
        pattern = str(Path(folder) / "f%05d.jpg")
        done = subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(video), "-vf",
             f"fps={rate:g},scale={width}:-2", "-q:v", "4", pattern],
            capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise VideoJudgeError(f"ffmpeg could not sample {Path(video).name}: "
                                  f"{done.stderr.strip()[-300:]}")
        files = sorted(Path(folder).glob("f*.jpg"))
        if not files:
            raise VideoJudgeError(f"ffmpeg found no frame in {Path(video).name}")
        if len(files) > max_frames:
            step = len(files) / max_frames
            files = [files[int(i * step)] for i in range(max_frames)]
        # fps=r emits frame n at time n / r (the filter's first output is at 0).
        return [Frame(round((int(f.stem[1:]) - 1) / rate, 3), f.read_bytes()) for f in files]


def answer_schema(modes: Sequence[str], windows: int) -> dict[str, Any]:
    """The JSON schema the server must follow."""
    return {
        "type": "object",
        "properties": {"defects": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "window": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": max(windows, 1)},
                                     {"type": "null"}]},
                "mode": {"type": "string", "enum": list(modes)},
                "what": {"type": "string"},
            },
            "required": ["window", "mode", "what"],
            "additionalProperties": False,
        }}},
        "required": ["defects"],
        "additionalProperties": False,
    }


def build_request(*, model: str, overview: str, windows: Sequence[Mapping[str, Any]],
                  modes: Sequence[Mapping[str, str]], frames: Sequence[Frame]) -> dict[str, Any]:
    """The chat-completions body: instructions, the taxonomy, the caption, then the frames."""
    taxonomy = "\n".join(f"- {m['key']}: {m.get('definition', m.get('label', ''))}" for m in modes)
    timeline = "\n".join(
        f"Window {n}: {float(w['start']):.2f}-{float(w['end']):.2f} s. Scene: {w['scene']} "
        f"Shot: {w['shot']}" for n, w in enumerate(windows, start=1))
    text = (
        "You check a video caption against the video frames below. List every defect you can "
        "see: a claim the frames contradict, something visible the caption leaves out, a wrong "
        "camera description, a wrong time or order, an unsupported inference. Give each defect "
        "its failure mode from this taxonomy and the window it is in (null for the overview):\n"
        f"{taxonomy}\n\nOverview: {overview}\n\n{timeline or '(no windows)'}\n\n"
        'Answer only JSON: {"defects": [{"window": 1, "mode": "factual", "what": "..."}]}; an '
        "empty list when the caption is right.")
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for frame in frames:
        content.append({"type": "text", "text": f"Frame at {frame.seconds:g} s:"})
        content.append({"type": "image_url", "image_url": {
            "url": "data:image/jpeg;base64," + base64.b64encode(frame.jpeg).decode()}})
    keys = [m["key"] for m in modes]
    return {
        "model": model,
        "temperature": 0,
        "messages": [{"role": "user", "content": content}],
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "caption_defects", "strict": True,
            "schema": answer_schema(keys, len(windows))}},
    }


def parse_answer(content: str, *, modes: Sequence[str], windows: int) -> list[Defect]:
    """The defects of an answer; :class:`VideoJudgeError` when it breaks the schema."""
    try:
        document = json.loads(content)
    except json.JSONDecodeError as error:
        raise VideoJudgeError(f"the answer is not JSON ({error.msg}): {content[:200]!r}") from None
    found = document.get("defects") if isinstance(document, dict) else None
    if not isinstance(found, list):
        raise VideoJudgeError(f'the answer has no "defects" list: {content[:200]!r}')
    defects = []
    for n, item in enumerate(found):
        if not isinstance(item, dict) or item.get("mode") not in modes:
            raise VideoJudgeError(f"defect {n}: unknown mode {item!r}")
        window = item.get("window")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                                   or not 1 <= window <= windows):
            raise VideoJudgeError(f"defect {n}: no window {window!r} (the caption has {windows})")
        defects.append(Defect(window, str(item["mode"]), str(item.get("what", ""))))
    return defects


def ask(settings: JudgeSettings, body: Mapping[str, Any]) -> str:
    """POST the body to ``{base_url}/chat/completions``; the answer's message content."""
    headers = {"Content-Type": "application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    request = urllib.request.Request(settings.base_url.rstrip("/") + "/chat/completions",
                                     data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_s) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise VideoJudgeError(f"the server answered {error.code}: "
                              f"{error.read()[:300].decode(errors='replace')}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise VideoJudgeError(f"the server cannot be reached: {error}") from None
    try:
        return str(answer["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        raise VideoJudgeError(f"not a chat completion: {str(answer)[:200]}") from None


def judge_caption(settings: JudgeSettings, *, video: str | Path, overview: str,
                  windows: Sequence[Mapping[str, Any]], modes: Sequence[Mapping[str, str]]
                  ) -> list[Defect]:
    """The defects the judge finds in one caption of ``video``."""
    frames = sample_frames(video, rate=settings.rate, max_frames=settings.max_frames,
                           width=settings.width)
    body = build_request(model=settings.model, overview=overview, windows=windows, modes=modes,
                         frames=frames)
    return parse_answer(ask(settings, body), modes=[m["key"] for m in modes],
                        windows=len(windows))

"""The Video-LLM judge against a scripted OpenAI-compatible server (a real local HTTP server in
this process speaking chat-completions), with frames sampled by the real ffmpeg."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scoring.metrics.video_judge import (
    JudgeSettings,
    VideoJudgeError,
    judge_caption,
    parse_answer,
    sample_frames,
)

MODES = [{"key": k, "definition": f"{k} errors"} for k in
         ("factual", "omission", "camera", "inference", "temporal", "segmentation")]
WINDOWS = [{"start": 0, "end": 2, "scene": "Colour bars.", "shot": "Static."},
           {"start": 2, "end": 4, "scene": "A counter.", "shot": "Static."}]


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    path = tmp_path_factory.mktemp("video") / "bars.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc=duration=4:size=160x120:rate=25", "-pix_fmt", "yuv420p", str(path)],
                   check=True, timeout=120)
    return path


class Scripted:
    """A chat-completions server: records each request, answers the next scripted content."""

    def __init__(self):
        self.requests: list[dict] = []
        self.answers: list[tuple[int, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization")})
                status, content = owner.answers.pop(0)
                answer = ({"choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": content}}]} if status == 200
                    else {"error": {"message": content}})
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server():
    scripted = Scripted()
    yield scripted
    scripted.close()


def test_frames_are_sampled_at_the_rate_and_thinned_to_the_cap(video):
    frames = sample_frames(video, rate=1, max_frames=10)
    assert [f.seconds for f in frames] == [0, 1, 2, 3]
    assert all(f.jpeg.startswith(b"\xff\xd8") for f in frames)
    assert len(sample_frames(video, rate=4, max_frames=5)) == 5


def test_a_file_that_is_not_a_video_is_said(tmp_path):
    bad = tmp_path / "x.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(VideoJudgeError, match="ffmpeg could not sample x.mp4"):
        sample_frames(bad, rate=1, max_frames=4)


def test_the_judge_sends_frames_caption_and_taxonomy_and_counts_the_defects(video, server):
    server.answers.append((200, json.dumps({"defects": [
        {"window": 2, "mode": "factual", "what": "no counter is visible"},
        {"window": None, "mode": "omission", "what": "the test pattern is not named"}]})))
    settings = JudgeSettings(base_url=server.url, model="qwen2.5-vl", api_key="k", rate=1,
                             max_frames=3)
    defects = judge_caption(settings, video=video, overview="Bars and a counter.",
                            windows=WINDOWS, modes=MODES)
    assert [(d.window, d.mode) for d in defects] == [(2, "factual"), (None, "omission")]
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer k"
    body = sent["body"]
    assert body["model"] == "qwen2.5-vl" and body["temperature"] == 0
    schema = body["response_format"]["json_schema"]["schema"]
    item = schema["properties"]["defects"]["items"]["properties"]
    assert item["mode"]["enum"] == [m["key"] for m in MODES]
    content = body["messages"][0]["content"]
    assert "Overview: Bars and a counter." in content[0]["text"]
    assert "Window 2: 2.00-4.00 s. Scene: A counter." in content[0]["text"]
    assert "- camera: camera errors" in content[0]["text"]
    images = [part for part in content if part["type"] == "image_url"]
    assert len(images) == 3
    jpeg = base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1])
    assert jpeg.startswith(b"\xff\xd8")
    assert settings.version == "video-judge-1+1fps+max3"


@pytest.mark.parametrize(("content", "problem"), [
    ("no json", "the answer is not JSON"),
    ('{"found": []}', 'the answer has no "defects" list'),
    ('{"defects": [{"window": 1, "mode": "style", "what": ""}]}', "unknown mode"),
    ('{"defects": [{"window": 7, "mode": "factual", "what": ""}]}', "no window 7"),
])
def test_an_answer_that_breaks_the_schema_is_an_error_not_a_score(content, problem):
    with pytest.raises(VideoJudgeError, match=problem):
        parse_answer(content, modes=[m["key"] for m in MODES], windows=2)


def test_a_server_error_is_said(video, server):
    server.answers.append((500, "out of memory"))
    with pytest.raises(VideoJudgeError, match="the server answered 500: .*out of memory"):
        judge_caption(JudgeSettings(base_url=server.url, model="m", rate=1, max_frames=1),
                      video=video, overview="x", windows=[], modes=MODES)


@pytest.mark.django_db
def test_the_command_stores_defect_counts_as_a_control_row(video, server, study, personas):
    from django.core.management import call_command

    from scoring.models import ExternalScore
    from tests.annotation.studybuild import caption_record, captions_add, fake_clip

    clip = fake_clip(study, "c1")  # its 6 s duration: the 4 s video stands in for it
    clip.original.open("wb")
    clip.original.write(video.read_bytes())
    clip.original.close()
    captions_add(study, [caption_record("c1", "Alpha"), caption_record("c1", "Bravo")])
    server.answers += [(200, '{"defects": []}'),
                       (200, '{"defects": [{"window": 1, "mode": "camera", "what": "pans"}]}')]
    out = io.StringIO()
    call_command("video_judge", "--study", "s1", "--base-url", server.url, "--model", "vlm",
                 "--rate", "1", "--max-frames", "2", stdout=out)
    stored = {(s.caption.model.name, s.value, s.direction, s.version, s.source)
              for s in ExternalScore.objects.select_related("caption__model")}
    assert stored == {("Alpha", 0.0, "lower", "video-judge-1+1fps+max2", "vlm"),
                      ("Bravo", 1.0, "lower", "video-judge-1+1fps+max2", "vlm")}
    assert "Stored 2 video_llm_judge score(s)" in out.getvalue()

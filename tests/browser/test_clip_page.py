"""A member opens a clip, the video plays from the ranged endpoint, and the timeline seeks it."""

import json

import pytest

from annotation.services.captions import captions_import_jsonl
from annotation.services.workflow import annotations_assign
from tests.browser.conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


@pytest.fixture
def captioned(personas, clips, study):
    record = {
        "clip": "b",
        "model": "m1",
        "overview": f"A test card. {PAYLOAD}",
        "windows": [
            {"start": 0, "end": 2, "scene": "Bars and a counter.", "shot": PAYLOAD},
            {"start": 2, "end": 4.5, "scene": "The counter runs.", "shot": "Static."},
            {"start": 4.5, "end": 6, "scene": "Still running.", "shot": "Static."},
        ],
    }
    captions_import_jsonl(study=study, data=json.dumps(record).encode())
    # Annotators see a clip's caption once it is assigned to them.
    annotations_assign(study=study, annotators=[personas["annotator"]])
    return clips["b"]


def video_time(page) -> float:
    return page.evaluate("document.getElementById('video').currentTime")


def test_clicking_a_window_on_the_timeline_seeks_the_video(sign_in, live_server, captioned):
    page = sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/studies/s1/clips/b/")  # the study page lists no clips to an annotator
    wait_until(page, "document.getElementById('video').readyState >= 1")
    page.locator(".timeline .segment").nth(2).click()
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 4.5) < 0.05")
    wait_until(page, "document.getElementById('video').readyState >= 2")
    assert video_time(page) == pytest.approx(4.5, abs=0.05)
    assert page.locator(".timeline .segment.current").count() == 1
    screenshot(page, "clip-page")


def test_seeking_far_into_the_clip_fetches_a_byte_range(sign_in, live_server, captioned, page):
    ranges = []
    page.on("request", lambda request: ranges.append(request.headers.get("range")) if "/video" in request.url else None)
    sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/studies/s1/clips/b/")
    wait_until(page, "document.getElementById('video').readyState >= 1")
    page.evaluate("document.getElementById('video').currentTime = 5.5")
    wait_until(page, "document.getElementById('video').readyState >= 2")
    assert any(r and r.startswith("bytes=") for r in ranges)
    assert video_time(page) == pytest.approx(5.5, abs=0.05)


def test_caption_text_with_html_renders_as_inert_text(sign_in, live_server, captioned):
    page = sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/studies/s1/clips/b/")
    assert PAYLOAD in page.locator(".overview").inner_text()
    assert page.locator("#caption img").count() == 0
    assert page.evaluate("window.__pwned") is None


def test_outsider_cannot_open_the_clip(sign_in, live_server, captioned, page):
    sign_in("outsider", "pw-outsider")
    response = page.goto(f"{live_server.url}/studies/s1/clips/b/")
    assert response.status == 404
    video = page.request.get(f"{live_server.url}/clips/{captioned.pk}/video")
    assert video.status == 404

"""The workspace in headless Chromium: live redline offline, timeline, shot changes, player."""

from __future__ import annotations

import pytest

from annotation.models import Clip
from scoring.metrics import edits
from tests.browser.conftest import screenshot, wait_until
from tests.browser.test_review import submitted  # noqa: F401 - a fixture used below
from tests.browser.test_workspace import ORIGINAL, open_workspace, video_time, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_redline_and_edit_size_work_offline_with_the_servers_numbers(
    sign_in, live_server, annotation
):
    page = sign_in("annotator", "pw-annotator")
    asked = []
    page.route("**/api/edit-size/**", lambda route: (asked.append(1), route.abort()))
    open_workspace(page, live_server, annotation)
    wait_saved(page)
    page.context.set_offline(True)

    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    typed = "A test card, with a counter that counts to five. ÉTÉ café 😀"
    page.keyboard.type(typed)
    page.wait_for_selector("#overview-text-redline ins")
    expected = edits.edit_size(ORIGINAL, typed)
    size = page.locator("#overview-text-size [data-words]")
    assert size.get_attribute("data-words") == str(expected.words_changed)
    similarity = page.locator("#overview-text-size [data-similarity]")
    assert float(similarity.get_attribute("data-similarity")) == expected.char_similarity
    shown = [(node.evaluate("n => n.tagName"), node.inner_text())
             for node in page.locator("#overview-text-redline > *").all()]
    tags = {"equal": "SPAN", "insert": "INS", "delete": "DEL"}
    assert shown == [(tags[s.op], s.text) for s in edits.word_diff(ORIGINAL, typed)]
    assert asked == []  # the redline never asked the server
    screenshot(page, "workspace-redline-offline")


def track_box(page):
    return page.locator("#timeline .tl-track").bounding_box()


def x_of(page, seconds: float, duration: float) -> float:
    box = track_box(page)
    return box["x"] + box["width"] * seconds / duration


def test_ruler_hover_click_to_seek_scrub_and_zoom(sign_in, live_server, annotation):
    page = sign_in("annotator", "pw-annotator")
    open_workspace(page, live_server, annotation)
    duration = annotation.caption.clip.duration
    labels = page.locator("#timeline .tl-major .tl-label").all_inner_texts()
    assert "0 s" in labels and "5 s" in labels and len(labels) >= 3
    assert page.locator("#timeline .segment").count() == 3

    box = track_box(page)
    y = box["y"] + box["height"] * 0.7
    page.mouse.move(x_of(page, 2.5, duration), y)
    hover = page.locator("#timeline .tl-hover-label")
    assert hover.is_visible()
    assert abs(float(hover.get_attribute("data-time")) - 2.5) < 0.02
    assert hover.inner_text().startswith("2.50 s")

    # A click seeks to exactly the time under the pointer, not to a window's start.
    x = box["x"] + box["width"] * 0.4137
    page.mouse.click(x, y)
    clicked = (x - box["x"]) / box["width"] * duration
    assert abs(video_time(page) - clicked) < 1e-3
    assert not 2.0 - 1e-3 < video_time(page) < 2.0 + 1e-3

    # Dragging scrubs: the video follows the pointer.
    page.evaluate("window.__seeks = 0; document.getElementById('video')"
                  ".addEventListener('seeking', () => window.__seeks++)")
    page.mouse.move(x_of(page, 1.0, duration), y)
    page.mouse.down()
    for t in (1.5, 2.2, 3.1, 4.4):
        page.mouse.move(x_of(page, t, duration), y)
        assert abs(video_time(page) - t) < 0.02
    page.mouse.up()
    assert page.evaluate("window.__seeks") >= 4

    # Zoom in until frames get ticks; the playhead stays in view.
    page.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(5):
        page.keyboard.press("=")
    assert page.locator("#timeline").get_attribute("data-zoom") == "32"
    assert page.locator("#tl-zoom").inner_text() == "32×"
    page.wait_for_selector("#timeline[data-frames=true] .tl-frame")
    assert page.locator("#timeline .tl-frame").count() > 10
    head = page.locator("#timeline .playhead").bounding_box()
    view = page.locator("#timeline .tl-scroll").bounding_box()
    assert view["x"] <= head["x"] <= view["x"] + view["width"]
    screenshot(page, "workspace-timeline-zoomed")
    page.keyboard.press("0")
    assert page.locator("#timeline").get_attribute("data-zoom") == "1"
    page.keyboard.press("?")  # the help describes the timeline
    help_text = page.locator("#help").inner_text()
    assert "Seek to the time clicked" in help_text
    assert "without snapping to shot changes" in help_text
    page.keyboard.press("Escape")
    assert page.locator("#timeline").get_attribute("data-frames") == "false"
    screenshot(page, "workspace-timeline")


def to_window_pass(annotation, annotator):
    from annotation.services import workflow as flow

    saved = flow.annotation_save(annotation_id=annotation.pk, actor=annotator,
                                 base_version=annotation.version,
                                 changes={"overview": {"verdict": "accept"}})
    return flow.overview_lock(annotation_id=saved.pk, actor=annotator, base_version=saved.version)


def drag(page, start_x: float, end_x: float, y: float, *, shift: bool = False, steps: int = 6):
    page.mouse.move(start_x, y)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(end_x, y, steps=steps)
    page.mouse.up()
    if shift:
        page.keyboard.up("Shift")


def handle_center(page, index: int, edge: str):
    box = page.locator(f"#timeline .segment[data-index='{index}'] .tl-{edge}").bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_dragging_a_rejected_windows_end_retimes_it_to_whole_frames_in_the_fields(
    sign_in, live_server, annotation, personas
):
    to_window_pass(annotation, personas["annotator"])
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    duration = annotation.caption.clip.duration
    assert page.locator("#timeline .tl-handle").count() == 0  # nothing to drag before a reject
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    assert page.locator("#timeline .tl-handle").count() == 2  # the current window's two edges
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 1.613, duration), y)  # inside: an edge stops at its neighbour's
    end = float(page.locator("#window-end").input_value())
    assert abs(end - 1.613) < 0.05
    assert round(end * 25, 6) == round(end * 25)  # a whole frame at 25 fps
    segment = page.locator("#timeline .segment[data-index='0']")
    assert segment.get_attribute("title").endswith(f"0.00–{end:.2f} s")
    # And back by typing: the timeline follows the field.
    page.locator("#window-end").fill("1.5")
    assert segment.get_attribute("title").endswith("0.00–1.50 s")
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 1.3, duration), y)
    end = float(page.locator("#window-end").input_value())
    assert abs(end - 1.3) < 0.05
    wait_saved(page)
    screenshot(page, "workspace-window-retimed")
    from tests.browser.test_workspace import annotator_pass

    stored = annotator_pass(annotation).windows.get(window__index=0)
    assert (stored.verdict, stored.start, stored.end) == ("reject", 0.0, end)


@pytest.fixture
def shot_annotation(study, personas, tmp_path):
    """A 5.2 s clip with shot changes at 2.0 s and 3.6 s (detected at import), captioned with two
    windows on a fixed grid that misses both, in the window pass with both windows accepted."""
    import json
    import subprocess

    from annotation.models import Caption
    from annotation.services import workflow as flow
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.clips import clip_import_file

    path = tmp_path / "cuts.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y",
         "-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=2",
         "-f", "lavfi", "-i", "color=c=blue:s=320x180:r=25:d=1.6",
         "-f", "lavfi", "-i", "mandelbrot=s=320x180:r=25",
         "-filter_complex", "[2:v]trim=end_frame=40[m];[0:v][1:v][m]concat=n=3:v=1[v]",
         "-map", "[v]", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
         str(path)],
        check=True,
    )  # fmt: skip
    clip = clip_import_file(study=study, path=path)
    clip.refresh_from_db()
    assert clip.shot_changes == [2.0, 3.6]
    windows = [{"start": 0, "end": 2.6, "scene": "A card.", "shot": "Static."},
               {"start": 2.6, "end": 5.2, "scene": "Blue, then a fractal.", "shot": "Static."}]
    record = {"clip": "cuts", "model": "m1", "overview": "A card, a fractal.", "windows": windows}
    captions_import_jsonl(study=study, data=json.dumps(record).encode())
    caption = Caption.objects.get(clip=clip)
    annotator = personas["annotator"]
    flow.annotations_assign(study=study, annotators=[annotator], captions=[caption])
    item = flow.annotation_open(annotation=caption.annotations.get(), actor=annotator)
    item = to_window_pass(item, annotator)
    return flow.annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version,
                                changes={"windows": [{"index": 0, "verdict": "accept"},
                                                     {"index": 1, "verdict": "accept"}],
                                         "ui_state": {"unit": 2}})


def test_segmentation_boundaries_drag_snap_to_shot_changes_and_split_and_merge_from_the_timeline(
    sign_in, live_server, shot_annotation
):
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, shot_annotation)
    duration = shot_annotation.caption.clip.duration
    page.wait_for_selector("#unit[data-unit='2']")
    shots = page.locator("#timeline .tl-shot")
    times = shots.evaluate_all("nodes => nodes.map(n => Number(n.dataset.time))")
    assert times == [2.0, 3.6]
    assert "2 shot changes" in page.locator("#shot-legend").inner_text()
    page.keyboard.press("r")
    page.wait_for_selector("#seg-rows .ws-row >> nth=1")
    assert page.locator("#tl-split").is_enabled()

    # The shared boundary at 2.6 s, dragged to near the cut at 3.6 s, snaps onto it; both
    # windows follow, and so do the fields.
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 3.54, duration), y)
    assert page.locator("#seg-end-0").input_value() == "3.6"
    assert page.locator("#seg-start-1").input_value() == "3.6"
    # With Shift held it lands on the frame under the pointer instead.
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 3.53, duration), y, shift=True)
    free = float(page.locator("#seg-end-0").input_value())
    assert free != 3.6 and abs(free - 3.53) < 0.05 and round(free * 25, 6) == round(free * 25)
    assert page.locator("#seg-start-1").input_value() == str(free).rstrip("0").rstrip(".")
    # Back onto the cut, then split the first window at the other cut from the timeline.
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 3.58, duration), y)
    assert page.locator("#seg-end-0").input_value() == "3.6"
    box = track_box(page)
    page.mouse.click(x_of(page, 2.0, duration), box["y"] + 8)  # on the ruler, at the cut
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 2) < 0.02")
    page.locator("#tl-split").click()
    wait_until(page, "document.querySelectorAll('#seg-rows .ws-row').length === 3")
    assert page.locator("#timeline .segment").count() == 3
    screenshot(page, "workspace-segmentation-timeline")
    # Select the middle window on the timeline and merge it with the next.
    page.locator("#timeline .segment[data-index='1']").click()
    page.wait_for_selector(".ws-row.ws-selected[data-row='1']")
    page.locator("#tl-merge").click()
    wait_until(page, "document.querySelectorAll('#seg-rows .ws-row').length === 2")
    page.keyboard.press("4")  # the segmentation mode
    wait_saved(page)

    from tests.browser.test_workspace import annotator_pass

    stored = annotator_pass(shot_annotation)
    shown = [(float(page.locator(f"#seg-start-{r}").input_value()),
              float(page.locator(f"#seg-end-{r}").input_value())) for r in range(2)]
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == shown
    assert shown[0][0] == 0 and shown[0][1] == pytest.approx(2.0, abs=0.03)
    assert shown[1] == (shown[0][1], 5.2)


def test_the_split_between_video_and_panel_is_dragged_and_remembered(
    sign_in, live_server, annotation
):
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    video = page.locator("#video")
    before = video.bounding_box()["width"]
    splitter = page.locator("#splitter").bounding_box()
    x, y = splitter["x"] + splitter["width"] / 2, splitter["y"] + 100
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 220, y, steps=5)
    page.mouse.up()
    wider = video.bounding_box()["width"]
    assert wider > before + 150
    share = float(page.evaluate("localStorage.getItem('redline:workspace:split')"))
    assert 0.6 < share <= 0.75
    # The ruler is drawn again for the new width: its last label is still inside the track.
    track = track_box(page)
    last = page.locator("#timeline .tl-major").last.bounding_box()
    assert track["x"] + track["width"] * 0.7 < last["x"] <= track["x"] + track["width"] + 1
    screenshot(page, "workspace-wide-video")

    page.reload()
    page.wait_for_selector("#workspace[data-ready=true]")
    assert abs(video.bounding_box()["width"] - wider) < 3
    # With the keyboard: the arrows move the split, not the video.
    page.locator("#splitter").focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert video.bounding_box()["width"] < wider - 10
    assert video_time(page) == 0


def test_the_poster_is_the_frame_at_zero(sign_in, live_server, annotation, tmp_path):
    """What the player shows at 0.00 s before playing is the frame at 0.00 s."""
    from annotation.media import video as media

    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    poster_url = page.locator("#video").get_attribute("poster")
    served = page.request.get(f"{live_server.url}{poster_url}")
    assert served.ok and served.headers["content-type"] == "image/jpeg"
    clip = annotation.caption.clip
    first = tmp_path / "first.jpg"
    media.make_poster(clip.original.path, first, at_seconds=0.0)
    later = tmp_path / "later.jpg"
    media.make_poster(clip.original.path, later, at_seconds=3.0)
    assert served.body() == first.read_bytes()
    assert served.body() != later.read_bytes()


def test_the_qc_review_page_draws_the_shot_changes_on_its_timeline(
    sign_in, live_server, submitted  # noqa: F811 - the fixture imported above
):
    annotation = submitted["Model A"]
    Clip.objects.filter(pk=annotation.caption.clip_id).update(shot_changes=[1.2, 4.52])
    page = sign_in("reviewer", "pw-reviewer")
    page.goto(f"{live_server.url}/review/{annotation.pk}/")
    marks = page.locator("#timeline .tl-shot")
    marks.first.wait_for()
    assert marks.evaluate_all("nodes => nodes.map(n => Number(n.dataset.time))") == [1.2, 4.52]
    assert page.locator("#timeline .tl-handle").count() == 0  # nothing to drag on a review

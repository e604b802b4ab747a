"""The QC reviewer's amend editor: time fields that take a decimal comma and name an overlapped
neighbour, and the segmentation amended on a timeline (drag, snap, keys, split, merge) whose
number rows follow it, all stored as the QC pass."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, Clip
from tests.browser.conftest import screenshot
from tests.browser.test_review import claim_from_queue, no_scoring, submitted  # noqa: F401 - fixtures used here

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

DURATION = 6.0  # clip b


def qc_pass(annotation):
    return Annotation.objects.get(pk=annotation.pk).passes.get(kind="qc")


def open_amend(page, live_server, annotation):
    claim_from_queue(page, live_server, annotation)
    page.locator("body").press("e")
    expect(page.locator("#amend-bar")).to_be_visible()


def window_editor(page, index: int):
    return page.locator(f".review-window[data-index='{index}'] .amend-editor")


def save(page):
    page.get_by_role("button", name="Save amendments and approve").click()


def test_a_decimal_comma_in_a_qc_time_field_is_read_as_a_decimal_point(sign_in, live_server, submitted):  # noqa: F811
    annotation = submitted["Model B"]
    page = sign_in("reviewer", "pw-reviewer")
    open_amend(page, live_server, annotation)
    editor = window_editor(page, 0)
    editor.locator(".verdict-choice").get_by_label("Reject").check()
    start = page.get_by_label("Window 1 start (s)")
    assert start.get_attribute("type") == "text" and start.get_attribute("inputmode") == "decimal"
    start.fill("0,5")
    editor.get_by_label("Temporal / order").check()
    problem = editor.locator(".field-problem").first
    expect(problem).to_be_hidden()
    start.fill("0,5,1")  # not one number: said at the field, and not sent
    expect(problem).to_contain_text("Window 1: Type the start in seconds.")
    start.fill("0,5")
    expect(problem).to_be_hidden()
    save(page)
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    row = qc_pass(annotation).windows.get(window__index=0)
    assert (row.start, row.end) == (0.5, 2.0)


def test_a_qc_window_overlapping_its_neighbour_is_named_and_blocks_the_amendment(
    sign_in, live_server, submitted  # noqa: F811
):
    annotation = submitted["Model B"]  # window 2 ends at 3.50 s in the annotator's pass
    page = sign_in("reviewer", "pw-reviewer")
    open_amend(page, live_server, annotation)
    editor = window_editor(page, 0)
    editor.locator(".verdict-choice").get_by_label("Reject").check()
    editor.get_by_label("Temporal / order").check()
    page.get_by_label("Window 1 end (s)").fill("2,5")
    end_problem = editor.locator(".field-problem").nth(1)
    expect(end_problem).to_have_text("Window 1: The end overlaps window 2 (starts 2.00 s).")
    expect(page.get_by_label("Window 1 end (s)")).to_have_attribute("aria-invalid", "")
    save(page)
    expect(page.locator("#notice")).to_contain_text("Not amended: Window 1: The end overlaps window 2 (starts 2.00 s).")
    expect(page.get_by_label("Window 1 end (s)")).to_be_focused()
    assert Annotation.objects.get(pk=annotation.pk).state == "in_review"
    assert not Annotation.objects.get(pk=annotation.pk).passes.filter(kind="qc").exists()
    # Moving the neighbour instead clears the message on the first window as well.
    editor2 = window_editor(page, 1)
    page.get_by_label("Window 2 start (s)").fill("2.5")
    expect(end_problem).to_be_hidden()
    expect(editor2.locator(".field-problem").first).to_be_hidden()
    save(page)
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    rows = {r.window.index: (r.start, r.end) for r in qc_pass(annotation).windows.select_related("window")}
    assert rows[0] == (0.0, 2.5) and rows[1] == (2.5, 3.5)


# ------------------------------------------------------------------ the segmentation's timeline


def track_box(page):
    return page.locator("#timeline-corrected .tl-track").bounding_box()


def x_of(page, seconds: float) -> float:
    box = track_box(page)
    return box["x"] + box["width"] * seconds / DURATION


def handle_center(page, index: int, edge: str):
    box = page.locator(f"#timeline-corrected .segment[data-index='{index}'] .tl-{edge}").bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def drag(page, start_x: float, end_x: float, y: float, *, shift: bool = False):
    page.mouse.move(start_x, y)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(end_x, y, steps=6)
    page.mouse.up()
    if shift:
        page.keyboard.up("Shift")


def row_times(page):
    rows = page.locator("#segmentation .boundary-row")
    return [
        (rows.nth(i).get_by_label("start (s)").input_value(), rows.nth(i).get_by_label("end (s)").input_value())
        for i in range(rows.count())
    ]


def expect_row(page, index: int, start: str | None = None, end: str | None = None):
    row = page.locator("#segmentation .boundary-row").nth(index)
    if start is not None:
        expect(row.get_by_label("start (s)")).to_have_value(start)
    if end is not None:
        expect(row.get_by_label("end (s)")).to_have_value(end)


def reject_segmentation(page):
    editor = page.locator("#segmentation .amend-editor")
    editor.locator(".verdict-choice").get_by_label("Reject").check()
    editor.locator(".mode-choice").get_by_label("Temporal / order").check()
    expect(page.locator("#timeline-corrected .tl-handle")).to_have_count(6)


def test_dragging_a_boundary_on_the_qc_timeline_moves_both_windows_rows_and_the_stored_pass(
    sign_in, live_server, submitted  # noqa: F811
):
    annotation = submitted["Model A"]  # the annotator accepted the segmentation: 0–2, 2–4, 4–6 s
    Clip.objects.filter(pk=annotation.caption.clip_id).update(shot_changes=[2.6])
    page = sign_in("reviewer", "pw-reviewer")
    open_amend(page, live_server, annotation)
    assert page.locator("#timeline-corrected .tl-handle").count() == 0  # nothing to drag before a reject
    reject_segmentation(page)
    expect(page.locator("#corrected-timeline-label")).to_contain_text("QC amendment")
    # The shared boundary at 2 s dragged near the cut at 2.6 s snaps onto it: both windows move.
    x, y = handle_center(page, 0, "end")
    drag(page, x, x_of(page, 2.55), y)
    expect_row(page, 0, end="2.6")
    assert row_times(page)[:2] == [("0", "2.6"), ("2.6", "4")]
    # Shift: no snapping, whole frames (25 fps).
    x, y = handle_center(page, 1, "end")
    drag(page, x, x_of(page, 4.5), y, shift=True)
    expect(page.locator("#segmentation .boundary-row").nth(1).get_by_label("end (s)")).not_to_have_value("4")
    end = float(row_times(page)[1][1])
    assert 4.3 < end < 4.7 and abs(end * 25 - round(end * 25)) < 1e-6
    assert row_times(page)[2][0] == row_times(page)[1][1]
    # Typing in a row moves the timeline.
    page.locator("#segmentation .boundary-row").nth(0).get_by_label("start (s)").fill("0,4")
    expect(page.locator("#timeline-corrected .segment[data-index='0']")).to_have_attribute(
        "title", "Window 1: 0.40–2.60 s")
    screenshot(page, "review-segmentation-drag")
    save(page)
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    stored = qc_pass(annotation)
    assert stored.segmentation_verdict == "reject" and stored.segmentation_modes == ["temporal"]
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == [(0.4, 2.6), (2.6, end), (end, 6.0)]


def test_split_at_the_playhead_and_merge_with_next_in_the_qc_segmentation(sign_in, live_server, submitted):  # noqa: F811
    annotation = submitted["Model A"]
    page = sign_in("reviewer", "pw-reviewer")
    open_amend(page, live_server, annotation)
    reject_segmentation(page)
    page.evaluate("document.getElementById('video').currentTime = 1")
    page.get_by_role("button", name="Split at playhead").click()
    expect(page.locator("#segmentation .boundary-row")).to_have_count(4)
    expect(page.locator("#timeline-corrected .segment")).to_have_count(4)
    assert row_times(page) == [("0", "1"), ("1", "2"), ("2", "4"), ("4", "6")]
    expect(page.locator("#segmentation .segmentation-said")).to_have_text("Split corrected window 1 at 1.00 s.")
    page.locator("#segmentation .boundary-row").nth(2).get_by_role("button", name="merge with next").click()
    expect(page.locator("#segmentation .boundary-row")).to_have_count(3)
    expect(page.locator("#timeline-corrected .segment")).to_have_count(3)
    assert row_times(page) == [("0", "1"), ("1", "2"), ("2", "6")]
    scene = page.locator("#segmentation .boundary-row").nth(2).get_by_label("scene").input_value()
    assert scene == "The counter keeps running. The counter reaches five."
    page.evaluate("document.getElementById('video').currentTime = 0")  # on an edge: nothing to split
    page.get_by_role("button", name="Split at playhead").click()
    expect(page.locator("#segmentation .segmentation-said")).to_contain_text("Put the playhead inside")
    save(page)
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    stored = qc_pass(annotation).corrected_windows
    assert [(w["start"], w["end"]) for w in stored] == [(0.0, 1.0), (1.0, 2.0), (2.0, 6.0)]
    assert stored[2]["scene"] == "The counter keeps running. The counter reaches five."


def test_keyboard_moves_a_qc_boundary_by_a_frame_and_by_a_second(sign_in, live_server, submitted):  # noqa: F811
    annotation = submitted["Model A"]
    page = sign_in("reviewer", "pw-reviewer")
    open_amend(page, live_server, annotation)
    reject_segmentation(page)
    handle = page.locator("#timeline-corrected .segment[data-index='0'] .tl-end")
    handle.focus()
    page.keyboard.press("ArrowRight")  # a frame at 25 fps
    expect_row(page, 0, end="2.04")
    assert row_times(page)[1][0] == "2.04"
    expect(page.locator("#timeline-corrected .segment[data-index='0'] .tl-end")).to_be_focused()
    page.keyboard.press("Shift+ArrowRight")  # a second
    expect_row(page, 0, end="3.04")
    page.keyboard.press("ArrowLeft")
    expect_row(page, 0, end="3")
    assert row_times(page)[1] == ("3", "4")
    save(page)
    expect(page.locator("#notice")).to_contain_text("Amended and approved")
    stored = qc_pass(annotation).corrected_windows
    assert [(w["start"], w["end"]) for w in stored] == [(0.0, 3.0), (3.0, 4.0), (4.0, 6.0)]

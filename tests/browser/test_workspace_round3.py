"""The workspace, round 3: windows never overlap (at the field, on the timeline, by keyboard),
times take a decimal comma, a quick reload restores quietly, and the header and legend hold still."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, Clip, Window
from annotation.services import workflow as flow
from tests.browser.conftest import screenshot, wait_until
from tests.browser.test_workspace import annotator_pass, open_workspace, wait_saved
from tests.browser.test_workspace_timeline import drag, handle_center, to_window_pass, x_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The caption (tests/conftest.py CAPTION_B): windows 0-2, 2-4, 4-6 s of a 6 s clip at 25 fps.


def stored(annotation, index):
    row = annotator_pass(annotation).windows.filter(window__index=index).first()
    return None if row is None else (row.verdict, row.start, row.end)


def test_a_window_retimed_over_its_neighbour_is_named_at_the_field_and_never_saved(
    sign_in, live_server, annotation, personas
):
    to_window_pass(annotation, personas["annotator"])
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    wait_saved(page)
    page.locator("#window-end").fill("3")
    expect(page.locator("#window-end-problem")).to_have_text("The end overlaps window 2 (starts 2.00 s).")
    expect(page.locator("#save-status")).to_have_attribute("data-status", "invalid")
    expect(page.locator("#checks")).to_contain_text("overlaps window 2")
    page.keyboard.press("Escape")  # out of the field
    page.keyboard.press("n")  # cannot move on with the overlap
    expect(page.locator("#notice")).to_contain_text("Window 1: The end overlaps window 2 (starts 2.00 s).")
    page.keyboard.press("Control+Enter")  # nor submit
    assert Annotation.objects.get(pk=annotation.pk).state == "in_progress"
    time.sleep(1.0)
    assert stored(annotation, 0) == ("reject", 0.0, 2.0), "the overlap never reached the server"

    # On the timeline the end stops at window 2's start, with or without Shift.
    page.locator("#window-end").fill("1.5")
    wait_saved(page)
    duration = annotation.caption.clip.duration
    for shift in (False, True):
        x, y = handle_center(page, 0, "end")
        drag(page, x, x_of(page, 3.3, duration), y, shift=shift)
        assert page.locator("#window-end").input_value() == "2"
        expect(page.locator("#window-end-problem")).to_be_hidden()
        page.locator("#window-end").fill("1.5")
    wait_saved(page)
    assert stored(annotation, 0) == ("reject", 0.0, 1.5)
    screenshot(page, "workspace-overlap-refused")


def test_a_window_edge_moves_by_keyboard_a_frame_or_a_second_and_stops_at_its_neighbour(
    sign_in, live_server, annotation, personas
):
    to_window_pass(annotation, personas["annotator"])
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.locator(".ws-chip[data-unit='1']").click()
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    # Tab reaches the edges of the window in hand from the timeline's toolbar side of the page.
    page.locator("#tl-zoom-out").focus()
    page.keyboard.press("Shift+Tab")
    end = page.locator("#timeline .segment[data-index='1'] .tl-end")
    expect(end).to_be_focused()
    assert end.get_attribute("role") == "slider" and end.get_attribute("aria-label") == "End of window 2"
    playhead = page.evaluate("document.getElementById('video').currentTime")
    page.keyboard.press("ArrowLeft")
    assert page.locator("#window-end").input_value() == "3.96"
    expect(end).to_be_focused()  # still there after the timeline is redrawn
    page.keyboard.press("Shift+ArrowLeft")
    assert page.locator("#window-end").input_value() == "2.96"
    assert end.get_attribute("aria-valuenow") == "2.96"
    assert page.evaluate("document.getElementById('video').currentTime") == playhead, "the edge moved, not the playhead"
    page.keyboard.press("Shift+Tab")
    start = page.locator("#timeline .segment[data-index='1'] .tl-start")
    expect(start).to_be_focused()
    page.keyboard.press("Shift+ArrowLeft")  # window 1 ends at 2.00 s: the start stops there
    assert page.locator("#window-start").input_value() == "2"
    page.keyboard.press("ArrowRight")
    assert page.locator("#window-start").input_value() == "2.04"
    wait_saved(page)
    assert stored(annotation, 1) == ("reject", 2.04, 2.96)


def test_times_take_a_decimal_comma_and_say_what_they_cannot_read(sign_in, live_server, annotation, personas):
    to_window_pass(annotation, personas["annotator"])
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    page.locator("#window-start").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("0,5")
    page.locator("#window-end").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("1,75")
    assert page.locator("#window-start").input_value() == "0,5"
    expect(page.locator("#timeline .segment[data-index='0']")).to_have_attribute("title", "Window 1: 0.50–1.75 s")
    wait_saved(page)
    assert stored(annotation, 0) == ("reject", 0.5, 1.75)
    page.locator("#window-end").fill("1,7,5")
    expect(page.locator("#window-end-problem")).to_have_text("Type the end in seconds.")
    expect(page.locator("#save-status")).to_have_attribute("data-status", "invalid")


def test_a_quick_reload_restores_the_persons_own_edits_without_a_merge_notice(
    sign_in, live_server, annotation, personas
):
    """Reloaded before the autosave went, the edits kept on this device are restored; the save
    sent as the page was left lands after the reloaded page read the annotation, so the
    restored edits meet themselves on the server, which is no merge with anyone."""
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    wait_saved(page)
    page.route("**/draft/", lambda route: route.abort())  # held back: the reload comes first
    page.keyboard.press("r")
    page.keyboard.type(" Typed just before the reload.")
    text = page.locator("#overview-text").input_value()
    page.reload()
    page.wait_for_selector("#workspace[data-ready=true]")
    expect(page.locator("#notice")).to_have_text("Restored your unsaved changes.")
    assert page.locator("#overview-text").input_value() == text
    landed = []

    def land_first(route):
        if not landed:  # the save sent on leaving arrives now, before this page's save
            landed.append(1)
            current = Annotation.objects.get(pk=annotation.pk)
            flow.annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                                 base_version=current.version,
                                 changes={"overview": {"verdict": "reject", "text": text}})
        route.continue_()

    page.unroute("**/draft/")
    page.route("**/draft/", land_first)
    page.locator("body").press("Control+s")
    wait_saved(page)
    assert landed == [1]
    expect(page.locator("#notice")).not_to_contain_text("Merged")
    assert page.locator("#conflict").is_hidden()
    assert page.locator("#overview-text").input_value() == text
    assert annotator_pass(annotation).overview_text == text


def test_the_header_holds_still_and_no_shot_changes_shows_no_mark(sign_in, live_server, annotation):
    assert Clip.objects.get(pk=annotation.caption.clip_id).shot_changes == []
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    parts = ("#steps", "#help-button", "#panel", "#timeline")

    def where():
        return [{k: box[k] for k in ("x", "y")} for box in (page.locator(part).bounding_box() for part in parts)]

    wait_saved(page)
    before = where()
    assert page.locator("#active-time").inner_text() == "Active 0 s"
    page.keyboard.press("r")
    page.keyboard.type(" More.")
    wait_until(page, "document.getElementById('active-time').textContent !== 'Active 0 s'", timeout=15)
    wait_saved(page)
    assert where() == before
    legend = page.locator("#shot-legend")
    assert legend.inner_text() == "No shot changes detected"
    assert legend.evaluate("node => getComputedStyle(node, '::before').display") == "none"


def test_a_three_line_scene_shows_all_its_lines_in_its_editor(sign_in, live_server, annotation, personas):
    scene = ("A test card with colour bars fills the frame while a white counter in the middle counts "
             "up from zero, one number a second, and a thin grey line crosses the bars from left to "
             "right at the same pace, reaching the far edge as the counter reaches two.")
    Window.objects.filter(caption=annotation.caption, index=0).update(scene=scene)
    to_window_pass(annotation, personas["annotator"])
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.keyboard.press("r")
    area = page.locator("#window-scene")
    sizes = area.evaluate(
        "node => [node.scrollHeight, node.clientHeight, parseFloat(getComputedStyle(node).lineHeight)]"
    )
    scroll_height, client_height, line = sizes
    assert scroll_height > 2.5 * line, "the scene takes three lines or more at this width"
    assert client_height >= scroll_height, f"the editor cuts the scene: {sizes}"

"""Two people (or two tabs) edit one annotation at once: what does not overlap is merged.

Each test opens the annotation in two browser contexts (two sessions of the annotator). The
first saves; the second's save is then stale. Changes that do not overlap are merged three-way
against the version both started from and the person is told; only true overlaps open the
conflict dialog, where the person picks a version per unit.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_workspace import annotator_pass, open_workspace, wait_for, wait_saved
from tests.browser.test_workspace_validation import lock_overview

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ORIGINAL = "A test card with a counter that counts up."


@pytest.fixture
def second_session(browser, live_server):
    """A second browser context signed in as the same annotator."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("annotator")
    page.get_by_label("Password").fill("pw-annotator")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/")
    yield page
    context.close()


def edit_scene(page, unit: int, text: str, mode: str):
    page.locator(f".ws-chip[data-unit='{unit}']").click()
    page.wait_for_selector(f"#unit[data-unit='{unit}']")
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type(text)
    page.keyboard.press("Escape")
    page.keyboard.press(mode)


def test_edits_of_different_windows_in_two_sessions_are_merged_and_the_person_told(
    sign_in, live_server, annotation, personas, second_session
):
    lock_overview(annotation, personas["annotator"])
    first = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    second = open_workspace(second_session, live_server, annotation)

    edit_scene(first, 0, "Colour bars, then a counter.", "2")
    wait_saved(first)
    edit_scene(second, 1, "The counter runs from one to four.", "2")
    second.wait_for_selector("#notice:has-text('Merged with changes saved elsewhere: Window 1')")
    wait_saved(second)
    assert second.locator("#conflict").is_hidden()
    assert second.locator(".ws-chip[data-unit='0']").get_attribute("data-verdict") == "reject"

    rows = {row.window.index: row for row in annotator_pass(annotation).windows.select_related("window")}
    assert (rows[0].scene, rows[0].modes) == ("Colour bars, then a counter.", ["omission"])
    assert (rows[1].scene, rows[1].modes) == ("The counter runs from one to four.", ["omission"])


def test_edits_of_different_stretches_of_the_overview_are_merged_word_by_word(
    sign_in, live_server, annotation, second_session
):
    first = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    second = open_workspace(second_session, live_server, annotation)

    first.keyboard.press("r")
    first.keyboard.press("Control+Home")
    first.keyboard.type("Colour bars: ")
    first.keyboard.press("Escape")
    first.keyboard.press("1")
    wait_saved(first)

    second.keyboard.press("r")
    second.keyboard.press("Control+End")
    second.keyboard.type(" Then five.")
    second.keyboard.press("Escape")
    second.keyboard.press("2")
    second.wait_for_selector("#notice:has-text('Merged with changes saved elsewhere: Overview')")
    wait_saved(second)
    merged = f"Colour bars: {ORIGINAL} Then five."
    assert second.locator("#overview-text").input_value() == merged
    assert second.locator("#conflict").is_hidden()
    correction = annotator_pass(annotation)
    assert (correction.overview_text, correction.overview_modes) == (merged, ["factual", "omission"])


def test_true_overlaps_open_the_dialog_with_both_versions_and_a_choice_per_window(
    sign_in, live_server, annotation, personas, second_session
):
    lock_overview(annotation, personas["annotator"])
    first = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    second = open_workspace(second_session, live_server, annotation)

    edit_scene(first, 0, "Bars first.", "2")
    edit_scene(first, 1, "The counter at two.", "2")
    wait_saved(first)

    second.context.set_offline(True)  # both edits wait on this device, then meet the first's
    edit_scene(second, 0, "Colour bars only.", "2")
    edit_scene(second, 1, "The counter at three.", "2")
    edit_scene(second, 2, "The counter reaches five, then stops.", "2")  # no overlap: merged
    second.wait_for_selector("#save-status[data-status=offline]")
    second.context.set_offline(False)
    second.wait_for_selector("#conflict:not([hidden])")
    dialog = second.locator("#conflict")
    assert [section.get_attribute("data-key") for section in dialog.locator(".ws-change").all()] == ["w:0", "w:1"]
    for text in ("Bars first.", "Colour bars only.", "The counter at two.", "The counter at three."):
        assert text in dialog.inner_text()
    assert dialog.locator(".ws-change[data-key='w:0'] .ws-redline ins").count() > 0
    second.set_viewport_size({"width": 1280, "height": second.evaluate("document.documentElement.scrollHeight")})
    screenshot(second, "workspace-merge-conflict")
    second.set_viewport_size({"width": 1280, "height": 860})

    dialog.locator(".ws-change[data-key='w:0'] input[value=theirs]").check()
    second.locator("#keep-mine").click()
    second.wait_for_selector("#conflict", state="hidden")
    wait_saved(second)

    def stored():
        return {row.window.index: row.scene for row in annotator_pass(annotation).windows.select_related("window")}

    wait_for(lambda: stored()[1] == "The counter at three.", message="the second's window 2 saved")
    assert stored() == {0: "Bars first.", 1: "The counter at three.", 2: "The counter reaches five, then stops."}
    second.locator(".ws-chip[data-unit='0']").click()
    assert second.locator("#window-scene").input_value() == "Bars first."

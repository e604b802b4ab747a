"""Impossible times in the workspace: said at the field, never saved, never shown as saved.

Each test types times that cannot be (an end before its start, a window past the clip's end,
overlapping corrected windows) and checks three things a person relies on: the page says what
is wrong where it is wrong, keys change only what is on screen, and whatever the page shows as
saved is exactly what the server stored.
"""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from annotation.services import workflow as flow
from tests.browser.test_workspace import annotator_pass, open_workspace, wait_for, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def lock_overview(annotation, annotator):
    """Accept and lock the overview through the services, so the page opens on the window pass."""
    current = Annotation.objects.get(pk=annotation.pk)
    flow.annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=current.version,
                         changes={"overview": {"verdict": "accept"}})
    flow.overview_lock(annotation_id=annotation.pk, actor=annotator,
                       base_version=Annotation.objects.get(pk=annotation.pk).version)


def watch_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def type_into(page, selector: str, text: str):
    page.locator(selector).click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    page.keyboard.type(text)


def checked_modes(page) -> list[str]:
    return page.eval_on_selector_all(".ws-modes input:checked", "nodes => nodes.map(node => node.value)")


def test_an_end_before_the_start_in_the_window_pass_is_said_at_the_field_and_blocks_accept_and_next(
    sign_in, live_server, annotation, personas
):
    lock_overview(annotation, personas["annotator"])
    page = sign_in("annotator", "pw-annotator")
    errors = watch_errors(page)
    open_workspace(page, live_server, annotation)
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    wait_saved(page)  # the reject itself (with the original times) is saved

    type_into(page, "#window-start", "3")  # window 1 is 0-2 s: now it starts after it ends
    problem = page.locator("#window-end-problem")
    problem.wait_for(state="visible")
    assert "after the start" in problem.inner_text()
    assert page.locator("#window-end").get_attribute("aria-invalid") is not None
    page.wait_for_selector("#save-status[data-status=invalid]")
    assert page.locator(".ws-chip[data-unit='0']").evaluate("node => node.classList.contains('ws-unsaved')")

    # Mode keys tick what the person sees, and nothing else.
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    assert checked_modes(page) == ["omission"]

    # Accept and next are refused with the reason; the person stays on the window.
    page.keyboard.press("a")
    assert "after the start" in page.locator("#notice").inner_text()
    assert page.locator("#window-end").evaluate("node => node === document.activeElement")
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    assert page.locator("#unit").get_attribute("data-unit") == "0"
    assert page.locator("#accept").get_attribute("aria-pressed") == "false"
    page.locator(".ws-chip[data-unit='2']").click()
    assert page.locator("#unit").get_attribute("data-unit") == "0"
    assert page.locator("#save-status").get_attribute("data-status") == "invalid"

    # The server has the reject with the original times and no mode: the page never said otherwise.
    row = annotator_pass(annotation).windows.get(window__index=0)
    assert (row.verdict, row.start, row.end, row.modes) == ("reject", 0, 2, [])

    type_into(page, "#window-start", "0.5")
    page.locator("#window-end-problem").wait_for(state="hidden")
    wait_saved(page)
    assert not page.locator(".ws-chip[data-unit='0']").evaluate("node => node.classList.contains('ws-unsaved')")
    row = annotator_pass(annotation).windows.get(window__index=0)
    assert (row.verdict, row.start, row.end, row.modes) == ("reject", 0.5, 2, checked_modes(page))
    assert page.locator("#window-start").input_value() == "0.5"
    assert errors == []


@pytest.mark.parametrize(("field", "typed", "said"), [
    ("#window-end", "99", "after the clip ends"),
    ("#window-start", "-1", "before 0"),
    ("#window-end", "", "Type the end"),
])
def test_other_impossible_window_times_are_said_and_not_saved(
    sign_in, live_server, annotation, personas, field, typed, said
):
    lock_overview(annotation, personas["annotator"])
    page = sign_in("annotator", "pw-annotator")
    errors = watch_errors(page)
    open_workspace(page, live_server, annotation)
    page.keyboard.press("r")
    wait_saved(page)
    type_into(page, field, typed)
    page.locator(f"{field}-problem").wait_for(state="visible")
    assert said in page.locator(f"{field}-problem").inner_text()
    page.wait_for_selector("#save-status[data-status=invalid]")
    page.keyboard.press("Escape")
    page.keyboard.press("a")
    assert said in page.locator("#notice").inner_text()
    row = annotator_pass(annotation).windows.get(window__index=0)
    assert (row.verdict, row.start, row.end) == ("reject", 0, 2)
    assert errors == []


def test_impossible_segmentation_rows_are_said_at_the_row_and_block_submit(
    sign_in, live_server, annotation, personas
):
    annotator = personas["annotator"]
    lock_overview(annotation, annotator)
    current = Annotation.objects.get(pk=annotation.pk)
    flow.annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=current.version,
                         changes={"windows": [{"index": i, "verdict": "accept"} for i in range(3)]})
    page = sign_in("annotator", "pw-annotator")
    errors = watch_errors(page)
    open_workspace(page, live_server, annotation)
    page.locator(".ws-chip[data-unit='3']").click()
    page.keyboard.press("r")
    page.wait_for_selector("#seg-rows .ws-row >> nth=2")
    page.keyboard.press("4")
    wait_saved(page)

    type_into(page, "#seg-start-1", "1.5")  # row 2 now starts inside row 1 (0-2 s)
    page.locator("#seg-start-1-problem").wait_for(state="visible")
    assert "previous window ends" in page.locator("#seg-start-1-problem").inner_text()
    type_into(page, "#seg-end-2", "3")  # and row 3 (4-6 s) ends before it starts
    page.locator("#seg-end-2-problem").wait_for(state="visible")
    assert "after the start" in page.locator("#seg-end-2-problem").inner_text()
    # Not stuck at "Saving…": the page says the rows are not saved, and why.
    page.wait_for_selector("#save-status[data-status=invalid]")
    page.wait_for_timeout(1200)  # past the autosave's debounce: still not claimed as saved
    assert page.locator("#save-status").get_attribute("data-status") == "invalid"

    page.keyboard.press("Escape")
    page.keyboard.press("4")  # the mode key unticks what is on screen
    assert checked_modes(page) == []
    page.keyboard.press("4")
    assert checked_modes(page) == ["segmentation"]
    page.keyboard.press("Control+Enter")
    assert "Corrected window 2" in page.locator("#notice").inner_text()
    page.keyboard.press("Escape")
    page.keyboard.press("p")
    assert page.locator("#unit").get_attribute("data-unit") == "3"
    assert Annotation.objects.get(pk=annotation.pk).state == "in_progress"
    stored = annotator_pass(annotation)
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == [(0, 2), (2, 4), (4, 6)]

    type_into(page, "#seg-start-1", "2.5")
    type_into(page, "#seg-end-2", "6")
    page.locator("#seg-start-1-problem").wait_for(state="hidden")
    assert page.locator("#seg-end-2-problem").is_hidden()
    wait_saved(page)

    def shown_rows():
        def seconds(field: str) -> float:
            return float(page.locator(field).input_value())

        rows = range(page.locator("#seg-rows .ws-row").count())
        return [(seconds(f"#seg-start-{r}"), seconds(f"#seg-end-{r}")) for r in rows]

    stored = annotator_pass(annotation)
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == shown_rows() == [(0, 2), (2.5, 4), (4, 6)]
    assert stored.segmentation_modes == checked_modes(page) == ["segmentation"]
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    wait_for(lambda: Annotation.objects.get(pk=annotation.pk).state == "submitted", message="submitted")
    assert errors == []


def test_a_fault_in_the_page_never_leaves_all_changes_saved_on_screen(sign_in, live_server, annotation):
    page = sign_in("annotator", "pw-annotator")
    open_workspace(page, live_server, annotation)
    page.keyboard.press("r")
    wait_saved(page)
    # An interrupted play() (a pause right after play) is the browser's, not a fault of the page.
    page.evaluate("Promise.reject(new DOMException('The play() request was interrupted', 'AbortError')); 0")
    page.wait_for_timeout(300)
    assert page.locator("#save-status").get_attribute("data-status") == "saved"
    page.evaluate("setTimeout(() => { throw new Error('boom'); })")
    page.wait_for_selector("#save-status[data-status=error]")
    assert "reload" in page.locator("#save-status").inner_text()
    assert "reload" in page.locator("#notice").inner_text()


def test_a_rejected_window_counts_as_judged_only_with_a_change_or_a_mode(sign_in, live_server, annotation, personas):
    lock_overview(annotation, personas["annotator"])
    page = sign_in("annotator", "pw-annotator")
    open_workspace(page, live_server, annotation)
    summary = page.locator("#progress-summary")
    assert summary.inner_text().startswith("0 of 3 windows judged")
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    assert summary.inner_text().startswith("0 of 3 windows judged")
    page.keyboard.press("2")
    assert summary.inner_text().startswith("1 of 3 windows judged")
    page.keyboard.press("2")
    assert summary.inner_text().startswith("0 of 3 windows judged")
    page.locator("#window-scene").click()
    page.keyboard.type(" More.")
    assert summary.inner_text().startswith("1 of 3 windows judged")
    wait_saved(page)
    row = annotator_pass(annotation).windows.get(window__index=0)
    assert (row.verdict, row.modes) == ("reject", []) and row.scene.endswith(" More.")

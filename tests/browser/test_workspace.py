"""The annotator workspace, driven like a person (mostly by keyboard) in headless Chromium."""

from __future__ import annotations

import json
import time

import pytest

from annotation.models import Annotation, CorrectionPass
from tests.browser.conftest import screenshot, wait_until
from tests.conftest import names_word

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
ORIGINAL = "A test card with a counter that counts up."
CORRECTED = "A test card with a counter that counts from zero to five."


def wait_for(condition, timeout: float = 10.0, message: str = "condition"):
    """Poll the database (or anything) until `condition()` is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {message}")


def annotator_pass(annotation) -> CorrectionPass:
    return CorrectionPass.objects.get(annotation=annotation, kind="annotator")


def open_workspace(page, live_server, annotation):
    page.goto(f"{live_server.url}/annotate/{annotation.pk}/")
    if page.locator("#start-work").count():  # a new annotation starts with an explicit POST
        page.click("#start-work")
    page.wait_for_selector("#workspace[data-ready=true]")
    return page


def wait_saved(page):
    page.wait_for_selector("#save-status[data-status=saved]")


def video_time(page) -> float:
    return page.evaluate("document.getElementById('video').currentTime")


def test_overview_reject_window_pass_segmentation_merge_and_submit(sign_in, live_server, annotation):
    page = sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/studies/s1/queue/")
    page.keyboard.press("Enter")  # "Start next" has the focus
    page.wait_for_selector("#workspace[data-ready=true]")
    assert page.url.endswith(f"/annotate/{annotation.pk}/")
    assert "Model A" in page.locator("h1").inner_text()
    assert not names_word(page.content(), "m1")

    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    assert "merge" in page.locator("#help").inner_text()
    page.keyboard.press("Escape")
    assert page.locator("#help").is_hidden()

    # Overview: reject, post-edit in place (the editor starts from the original), tag modes.
    page.keyboard.press("r")
    editor = page.locator("#overview-text")
    assert editor.evaluate("node => node === document.activeElement")
    assert editor.input_value() == ORIGINAL
    page.keyboard.press("Control+a")
    page.keyboard.type("Nothing like it.")
    page.wait_for_selector("#overview-text-size .ws-near-total")  # a near-total rewrite is flagged
    page.keyboard.press("Control+a")
    page.keyboard.type(CORRECTED)  # letters like a, r, n are typed, not taken as shortcuts
    assert editor.input_value() == CORRECTED
    page.wait_for_selector("#overview-text-size [data-words]:has-text('4 words changed')")
    assert page.locator("#overview-text-size .ws-near-total").count() == 0
    assert "up." in " ".join(page.locator("#overview-text-redline del").all_inner_texts())
    assert "from zero to five." in " ".join(page.locator("#overview-text-redline ins").all_inner_texts())
    page.keyboard.press("Alt+1")  # with a modifier, a shortcut works while typing
    assert page.locator("#mode-factual").is_checked()
    assert editor.evaluate("node => node === document.activeElement")
    page.keyboard.press("Escape")
    page.keyboard.press("3")
    assert page.locator("#precedence").is_visible()
    assert "camera" in page.locator("#precedence").inner_text().lower()
    page.keyboard.press("3")
    assert page.locator("#precedence").is_hidden()
    assert page.locator("#mode-factual").is_checked()
    wait_saved(page)
    screenshot(page, "workspace-overview")

    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    annotation.refresh_from_db()
    assert annotation.overview_locked_at is not None
    correction = annotator_pass(annotation)
    assert (correction.overview_verdict, correction.overview_text, correction.overview_modes) == (
        "reject", CORRECTED, ["factual"])

    # Window pass: accept window 1 (moves on), edit window 2 and retime its end.
    page.keyboard.press("a")
    page.wait_for_selector("#unit[data-unit='1']")
    page.keyboard.press("r")
    scene = page.locator("#window-scene")
    assert scene.evaluate("node => node === document.activeElement")
    page.keyboard.press("End")
    page.keyboard.type(" It shows two and three.")
    page.locator("#window-end").click()
    page.keyboard.press("Control+a")
    page.keyboard.type("3.8")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    page.wait_for_selector("#window-scene-redline ins")
    wait_saved(page)
    screenshot(page, "workspace-windows")
    page.keyboard.press("n")
    page.wait_for_selector("#unit[data-unit='2']")
    page.keyboard.press("a")

    # Segmentation: reject, merge corrected windows 2 and 3, tag the mode.
    page.wait_for_selector("#unit[data-unit='3']")
    page.keyboard.press("r")
    page.wait_for_selector("#seg-rows .ws-row >> nth=2")
    page.locator("#timeline .segment").nth(1).click()  # selects it, seeks to the time clicked
    page.wait_for_selector(".ws-row.ws-selected[data-row='1']")
    clicked = video_time(page)
    assert 2 < clicked < 4
    page.keyboard.press("m")
    wait_until(page, "document.querySelectorAll('#seg-rows .ws-row').length === 2")
    for _ in range(25):  # 25 frames at 25 fps: the playhead moves on by 1 s
        page.keyboard.press(".")
    wait_until(page, f"Math.abs(document.getElementById('video').currentTime - {clicked + 1}) < 0.01")
    split_at = round(video_time(page), 3)
    page.keyboard.press("x")
    wait_until(page, "document.querySelectorAll('#seg-rows .ws-row').length === 3")
    page.keyboard.press("4")
    wait_saved(page)
    screenshot(page, "workspace-segmentation")

    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    annotation.refresh_from_db()
    assert annotation.state == "submitted"
    correction = annotator_pass(annotation)
    windows = {row.window.index: row for row in correction.windows.select_related("window")}
    assert windows[0].verdict == "accept" and windows[2].verdict == "accept"
    assert windows[1].verdict == "reject" and windows[1].end == pytest.approx(3.8)
    assert windows[1].scene.endswith("It shows two and three.") and windows[1].modes == ["omission"]
    assert correction.segmentation_verdict == "reject" and correction.segmentation_modes == ["segmentation"]
    assert [(w["start"], w["end"]) for w in correction.corrected_windows] == [
        (0, 2), (2, split_at), (split_at, 6)]
    assert annotation.active_seconds > 0


def test_reload_mid_edit_restores_the_draft(sign_in, live_server, annotation):
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type("Typed just before the reload")
    page.reload()  # before the debounced autosave had a chance
    page.wait_for_selector("#workspace[data-ready=true]")
    editor = page.locator("#overview-text")
    assert editor.input_value() == "Typed just before the reload"
    assert editor.evaluate("node => node === document.activeElement")
    wait_saved(page)
    assert page.locator("#conflict").is_hidden()
    wait_for(lambda: annotator_pass(annotation).overview_text == "Typed just before the reload",
             message="the draft saved")


def test_a_visit_of_the_workspace_counts_active_time_from_the_visit(sign_in, live_server, annotation):
    """Issue 27: the first save of a new visit credits the time since the page opened the item,
    not since the previous visit's last save."""
    from datetime import timedelta

    from django.utils import timezone

    hour_ago = timezone.now() - timedelta(hours=1)
    Annotation.objects.filter(pk=annotation.pk).update(last_saved_at=hour_ago, active_until=hour_ago)
    open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    wait_for(lambda: Annotation.objects.get(pk=annotation.pk).active_until > timezone.now() - timedelta(minutes=1),
             message="the visit opened the item again")
    assert Annotation.objects.get(pk=annotation.pk).version == annotation.version  # looking bumps nothing


def test_two_tabs_on_one_annotation_show_the_conflict_and_let_the_person_choose(sign_in, live_server, annotation):
    first = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    second = open_workspace(first.context.new_page(), live_server, annotation)

    first.keyboard.press("r")
    first.keyboard.press("Control+a")
    first.keyboard.type("Written in the first tab.")
    wait_saved(first)

    second.keyboard.press("r")
    second.keyboard.press("Control+a")
    second.keyboard.type("Written in the second tab.")
    second.wait_for_selector("#conflict:not([hidden])")
    dialog = second.locator("#conflict")
    assert "Written in the first tab." in dialog.inner_text()
    assert "Written in the second tab." in dialog.inner_text()
    assert second.locator("#save-status").get_attribute("data-status") == "conflict"
    second.wait_for_selector("#conflict-changes .ws-redline ins")
    # A viewport as tall as the page, so that the dialog's backdrop covers all of the screenshot.
    second.set_viewport_size({"width": 1280, "height": second.evaluate("document.documentElement.scrollHeight")})
    screenshot(second, "workspace-conflict")
    second.set_viewport_size({"width": 1280, "height": 860})
    assert second.locator("#keep-mine").evaluate("node => node === document.activeElement")
    second.keyboard.press("Enter")  # Keep mine
    wait_saved(second)
    wait_for(lambda: annotator_pass(annotation).overview_text == "Written in the second tab.", message="mine kept")

    # The first tab now rewrites the same words on a stale version (a true overlap): it takes theirs.
    # (Edits that do not overlap are merged instead: tests/browser/test_workspace_merge.py.)
    first.keyboard.press("Control+a")
    first.keyboard.type("Written in the third tab.")
    first.wait_for_selector("#conflict:not([hidden])")
    first.locator("#take-theirs").click()
    first.wait_for_selector("#conflict", state="hidden")
    assert first.locator("#overview-text").input_value() == "Written in the second tab."
    wait_saved(first)
    assert annotator_pass(annotation).overview_text == "Written in the second tab."


def test_an_edit_made_offline_is_saved_after_reconnecting(sign_in, live_server, annotation):
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type("Online part.")
    wait_saved(page)
    page.context.set_offline(True)
    page.keyboard.type(" Offline part.")
    page.wait_for_selector("#save-status[data-status=offline]")
    stored = json.loads(page.evaluate(f"localStorage.getItem('redline:annotation:{annotation.pk}')"))
    assert stored["units"]["overview"]["text"] == "Online part. Offline part."
    assert annotator_pass(annotation).overview_text == "Online part."
    page.context.set_offline(False)
    wait_saved(page)
    wait_for(lambda: annotator_pass(annotation).overview_text == "Online part. Offline part.",
             message="offline edit saved")


def test_edits_kept_on_the_device_meet_a_newer_version_and_the_person_chooses(
    sign_in, live_server, annotation, personas
):
    from annotation.services.workflow import annotation_save

    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    context = page.context
    context.set_offline(True)
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type("Kept on this device.")
    page.wait_for_selector("#save-status[data-status=offline]")
    page.close()  # the tab is gone (a crash, say); its edit is only in localStorage
    current = Annotation.objects.get(pk=annotation.pk)
    annotation_save(annotation_id=annotation.pk, actor=personas["annotator"], base_version=current.version,
                    changes={"overview": {"verdict": "reject", "text": "Saved from elsewhere."}})

    context.set_offline(False)
    tab = open_workspace(context.new_page(), live_server, annotation)
    tab.wait_for_selector("#conflict:not([hidden])")
    assert "Kept on this device." in tab.locator("#conflict").inner_text()
    assert "Saved from elsewhere." in tab.locator("#conflict").inner_text()
    tab.locator("#keep-mine").click()
    wait_saved(tab)
    assert annotator_pass(annotation).overview_text == "Kept on this device."


def test_caption_text_with_html_renders_as_inert_text(sign_in, live_server, personas, clips, study):
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.workflow import annotations_assign

    record = {
        "clip": "b", "model": "m1", "overview": f"A test card. {PAYLOAD}",
        "windows": [
            {"start": 0, "end": 3, "scene": f"Bars. {PAYLOAD}", "shot": PAYLOAD},
            {"start": 3, "end": 6, "scene": "The counter runs.", "shot": "Static."},
        ],
    }
    captions_import_jsonl(study=study, data=json.dumps(record).encode())
    annotations_assign(study=study, annotators=[personas["annotator"]])
    annotation = Annotation.objects.get()
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    assert PAYLOAD in page.locator("#original-overview").inner_text()
    page.keyboard.press("r")
    page.keyboard.type(" Edited.")
    page.wait_for_selector("#overview-text-redline ins")
    assert PAYLOAD in page.locator("#overview-text-redline").inner_text()
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    assert PAYLOAD in page.locator(".ws-shot").inner_text()
    page.keyboard.press("r")
    page.keyboard.type(" More.")
    page.wait_for_selector("#window-scene-redline ins")
    assert page.locator("#workspace img, #workspace script:not([type])").count() == 0
    assert page.evaluate("window.__pwned") is None
    wait_saved(page)


def test_the_timeline_seeks_the_video_and_watching_is_recorded(sign_in, live_server, annotation):
    page = open_workspace(sign_in("annotator", "pw-annotator"), live_server, annotation)
    wait_until(page, "document.getElementById('video').readyState >= 1")
    page.locator("#timeline .segment").nth(2).click()  # its middle: seeks to the time clicked
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 5) < 0.05")
    assert page.locator("#timeline .segment.current").get_attribute("data-index") == "2"
    left = page.evaluate("parseFloat(document.querySelector('#timeline .playhead').style.left)")
    assert left == pytest.approx(100 * 5 / 6, abs=1)

    page.keyboard.press("j")  # back 5 s (clamped at 0)
    wait_until(page, "document.getElementById('video').currentTime < 0.05")
    page.keyboard.press(".")
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 0.04) < 0.01")
    page.keyboard.press("]")
    assert page.evaluate("document.getElementById('video').playbackRate") == 1.25
    page.keyboard.press("Space")
    wait_until(page, "document.getElementById('video').currentTime > 1.2")
    page.keyboard.press("k")
    assert page.evaluate("document.getElementById('video').paused")
    left = page.evaluate("parseFloat(document.querySelector('#timeline .playhead').style.left)")
    assert left == pytest.approx(100 * video_time(page) / 6, abs=1)

    # Loop the window under the playhead: playback wraps from its end back to its start.
    page.locator("#timeline .segment").nth(0).click()
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 1) < 0.05")
    page.keyboard.press("o")
    assert page.locator("#loop-button").get_attribute("aria-pressed") == "true"
    page.evaluate("""() => {
        const video = document.getElementById('video');
        let latest = 0;
        const watch = () => {
            if (latest > 1.6 && video.currentTime < 1) { window.__wrapped = true; return; }
            latest = video.currentTime;
            requestAnimationFrame(watch);
        };
        watch();
    }""")
    page.keyboard.press("Space")
    wait_until(page, "window.__wrapped === true")
    page.keyboard.press("Space")
    page.keyboard.press("o")

    page.keyboard.press("Control+s")
    wait_saved(page)

    def recorded():
        annotation.refresh_from_db()
        return annotation.telemetry.get("watched_share", 0) > 0.1 and annotation.active_seconds > 0

    wait_for(recorded, message="telemetry saved")
    assert annotation.telemetry["seeks"] >= 2
    assert "1.25" in annotation.telemetry["speeds"]


def test_a_fifty_window_caption_renders_and_answers_the_keyboard(sign_in, live_server, personas, clips, study):
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.workflow import annotations_assign

    windows = [
        {"start": round(i * 0.12, 2), "end": round((i + 1) * 0.12, 2), "scene": f"Scene {i + 1}: the counter.",
         "shot": "Static frame."}
        for i in range(50)
    ]
    record = {"clip": "b", "model": "m1", "overview": "A long caption.", "windows": windows}
    captions_import_jsonl(study=study, data=json.dumps(record).encode())
    annotations_assign(study=study, annotators=[personas["annotator"]])
    annotation = Annotation.objects.get()
    page = sign_in("annotator", "pw-annotator")
    # How fast: `make bench` (bench/bench_workspace.py) times this page; here, that it works.
    open_workspace(page, live_server, annotation)
    assert page.locator("#timeline .segment").count() == 50

    page.keyboard.press("a")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    assert page.locator(".ws-chip").count() == 51
    for position in range(1, 6):
        page.keyboard.press("a")
        page.wait_for_selector(f"#unit[data-unit='{position}']")
    assert "Window 6 of 50" in page.locator("#unit h2").inner_text()
    wait_saved(page)
    assert annotator_pass(annotation).windows.filter(verdict="accept").count() == 5


def test_a_returned_annotation_comes_first_shows_the_comment_and_is_resubmitted(
    sign_in, live_server, annotation, personas
):
    from annotation.services import workflow as flow

    annotator, reviewer = personas["annotator"], personas["reviewer"]

    def save(changes):
        current = Annotation.objects.get(pk=annotation.pk)
        flow.annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=current.version,
                             changes=changes)

    save({"overview": {"verdict": "accept"}})
    flow.overview_lock(annotation_id=annotation.pk, actor=annotator,
                       base_version=Annotation.objects.get(pk=annotation.pk).version)
    save({"windows": [{"index": i, "verdict": "accept"} for i in range(3)],
          "segmentation": {"verdict": "accept"}})
    flow.annotation_submit(annotation_id=annotation.pk, actor=annotator,
                           base_version=Annotation.objects.get(pk=annotation.pk).version)
    flow.review_claim(annotation_id=annotation.pk, actor=reviewer)
    flow.review_return(annotation_id=annotation.pk, actor=reviewer,
                       units=[{"unit": "window:2", "comment": "Window 3 misses the <b>counter</b> reaching five."}])

    page = sign_in("annotator", "pw-annotator")
    page.goto(f"{live_server.url}/studies/s1/queue/")
    first_row = page.locator("#queue tbody tr").first
    assert first_row.get_attribute("data-state") == "returned"
    assert "Window 3 misses the <b>counter</b> reaching five." in first_row.inner_text()
    assert "1 returned by QC" in page.locator(".ws-progress").inner_text()
    page.keyboard.press("Enter")
    page.wait_for_selector("#workspace[data-ready=true]")
    assert page.locator("#return-banner").is_visible()
    # The comments open from the one-line banner; their text is there, as text, either way.
    assert "misses the <b>counter</b>" in page.locator("#returned-units").text_content()
    assert page.locator("#workspace").get_attribute("data-state") == "windows"

    page.locator(".ws-chip[data-unit='2']").click()
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 4) < 0.01")
    page.keyboard.press("r")
    page.keyboard.press("End")
    page.keyboard.type(" The counter reaches five.")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    for _ in range(10):  # to 4.4 s, then "set start from playhead"
        page.keyboard.press(".")
    wait_until(page, "Math.abs(document.getElementById('video').currentTime - 4.4) < 0.01")
    page.keyboard.press("s")
    assert page.locator("#window-start").input_value() == "4.4"
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=done]")
    annotation.refresh_from_db()
    assert annotation.state == "submitted" and annotation.return_comment == ""
    window = annotator_pass(annotation).windows.get(window__index=2)
    assert window.start == pytest.approx(4.4) and window.scene.endswith("The counter reaches five.")


def test_study_admin_assigns_captions_from_the_study_page(sign_in, live_server, caption, personas):
    page = sign_in("admin", "pw-admin")
    page.goto(f"{live_server.url}/studies/s1/")
    assert page.locator("#assign-form input[value=annotator]").is_checked()
    page.get_by_role("button", name="Assign unassigned captions").click()
    page.wait_for_selector("#assign-result:has-text('Assigned 1 caption')")
    assert Annotation.objects.filter(annotator=personas["annotator"]).count() == 1


"""Every state of the workspace fits a 1280×720 laptop screen without scrolling the page, and
nothing floating (the undo notice, a failure mode's definition) covers a control.

Measured in Chromium: the page's scroll height, each control's box against the viewport and
against the box that clips it, and what is on top at the control's centre."""

from __future__ import annotations

import json

import pytest

from annotation.models import Caption
from annotation.services import workflow as flow
from annotation.services.captions import captions_import_jsonl
from annotation.services.workflow import annotation_open, annotations_assign
from tests.browser.conftest import screenshot
from tests.browser.test_workspace import open_workspace, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 720}

# The demo's camera-pan caption (fixtures/demo/captions.json), on the 6 s test clip.
PAN = {
    "clip": "b",
    "model": "m-pan",
    "overview": (
        "On a grassy hillside under a blue sky, a tall red pillar, a yellow square and a dark blue block "
        "slide one after another from right to left across the frame, as if carried along a conveyor. "
        "The camera stays still and watches them pass."
    ),
    "windows": [
        {"start": 0.0, "end": 1.6, "scene": "A tall red pillar stands on green wavy hills under a blue sky.",
         "shot": "Wide shot; the camera pans right and the pillar leaves the frame on the left."},
        {"start": 1.6, "end": 4.1, "scene": "A yellow square glides from right to left across the hills.",
         "shot": "Static wide shot."},
        {"start": 4.1, "end": 6.0,
         "scene": "A dark blue block stands on the hills, ending near the centre of the frame.",
         "shot": "The pan to the right continues to the end, bringing the block in from the right."},
    ],
}

# Where each control is, whether the page scrolls, what clips it and what covers its centre.
MEASURE = """(selectors) => {
  const out = { scrollHeight: document.documentElement.scrollHeight, innerHeight, controls: {} };
  for (const selector of selectors) {
    const node = document.querySelector(selector);
    if (!node) { out.controls[selector] = null; continue; }
    const box = node.getBoundingClientRect();
    let clip = { top: 0, bottom: innerHeight };
    for (let up = node.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (/(auto|scroll|hidden)/.test(style.overflowY)) {
        const b = up.getBoundingClientRect();
        clip = { top: Math.max(clip.top, b.top), bottom: Math.min(clip.bottom, b.bottom) };
      }
    }
    const x = Math.min(Math.max(box.left + box.width / 2, 0), innerWidth - 1);
    const y = Math.min(Math.max(box.top + Math.min(box.height, 24) / 2, 0), innerHeight - 1);
    const top = document.elementFromPoint(x, y);
    out.controls[selector] = {
      top: box.top, bottom: box.bottom, clipTop: clip.top, clipBottom: clip.bottom,
      covered: top && !node.contains(top) && !top.contains(node) ? (top.id || top.className || top.tagName) : null,
    };
  }
  return out;
}"""


def assert_fits(page, state: str, *selectors: str):
    """The page does not scroll; every control is wholly on screen, not clipped, not covered."""
    found = page.evaluate(MEASURE, list(selectors))
    problems = []
    if found["scrollHeight"] > found["innerHeight"]:
        problems.append(f"the page scrolls ({found['scrollHeight']} px in {found['innerHeight']} px)")
    for selector, box in found["controls"].items():
        if box is None:
            problems.append(f"{selector} is missing")
            continue
        if box["top"] < box["clipTop"] - 0.5 or box["bottom"] > box["clipBottom"] + 0.5:
            problems.append(f"{selector} spans {box['top']:.0f}–{box['bottom']:.0f} px, outside "
                            f"{box['clipTop']:.0f}–{box['clipBottom']:.0f} px")
        if box["covered"]:
            problems.append(f"{selector} is covered by {box['covered']}")
    screenshot(page, f"workspace-fit-{state}")
    assert not problems, f"{state}: " + "; ".join(problems)


@pytest.fixture
def pan(study, clips, personas):
    captions_import_jsonl(study=study, data=json.dumps(PAN).encode())
    caption = Caption.objects.get(model__name="m-pan")
    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    return annotation_open(annotation=caption.annotations.get(), actor=personas["annotator"])


WINDOW_CONTROLS = ("#accept", "#reject", "#checks", "#prev", "#next", "#submit")


def test_every_workspace_state_fits_1280_by_720(sign_in, live_server, pan, settings):
    settings.UNDO_SECONDS = 30
    page = sign_in("annotator", "pw-annotator")
    page.set_viewport_size(LAPTOP)
    open_workspace(page, live_server, pan)

    assert_fits(page, "overview", "#accept", "#reject", "#original-overview", "#lock-overview")
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    page.keyboard.press("]")  # a message: "Speed 1.25×"
    assert_fits(page, "overview-reject", "#overview-text", "#overview-text-redline", "#mode-factual",
                "#mode-temporal", "#checks", "#lock-overview")
    page.keyboard.press("a")
    assert_fits(page, "overview-accept", "#accept", "#checks", "#lock-overview")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")

    # The undo notice of the lock shows for ten seconds: it covers no control meanwhile.
    page.wait_for_selector("#undo-toast")
    page.keyboard.press("a")  # window 1 accepted; window 2 is open
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    end = page.locator("#window-end")
    end.fill("5")  # past window 3's start: a message at the field
    page.wait_for_selector("#window-end-problem:not([hidden])")
    assert page.locator("#undo-toast").is_visible()
    assert_fits(page, "window-reject-undo", *WINDOW_CONTROLS, "#window-scene", "#window-shot", "#window-start",
                "#window-end", "#window-end-problem", "#mode-factual", "#mode-temporal", "#mode-camera",
                "#undo-toast")
    end.fill("4.1")
    wait_saved(page)

    # A mode's definition opened by a click does not stay over anything; opened from the
    # keyboard it covers no control either.
    page.locator("label[for=mode-camera]").click()
    page.mouse.move(5, 5)  # the pointer goes; the click's focus stays on the checkbox
    assert page.locator("#mode-camera-definition").is_hidden()
    page.locator("#mode-camera").focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert page.locator("#mode-camera-definition").is_visible()
    assert_fits(page, "window-tooltip", *WINDOW_CONTROLS, "#mode-factual", "#mode-temporal", "#mode-omission",
                "#window-end", "#window-shot")
    page.keyboard.press("Escape")

    page.locator(".ws-chip[data-unit='2']").click()
    page.keyboard.press("a")  # on to the segmentation
    page.wait_for_selector("#unit[data-unit='3']")
    page.keyboard.press("r")
    page.keyboard.press("4")
    for t in (0.8, 2.8, 3.5):  # six corrected windows
        page.evaluate(f"document.getElementById('video').currentTime = {t}")
        page.keyboard.press("x")
    assert page.locator(".ws-row").count() == 6
    assert_fits(page, "segmentation-six-rows", "#accept", "#reject", "#seg-start-0", "#seg-shot-0",
                "#mode-segmentation", "#checks", "#prev", "#submit")
    wait_saved(page)


def test_a_returned_item_fits_with_its_compact_banner(sign_in, live_server, pan, personas):
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    item = flow.annotation_save(annotation_id=pan.pk, actor=annotator, base_version=pan.version,
                                changes={"overview": {"verdict": "accept"}})
    item = flow.overview_lock(annotation_id=item.pk, actor=annotator, base_version=item.version)
    item = flow.annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version, changes={
        "windows": [{"index": i, "verdict": "accept"} for i in range(3)], "segmentation": {"verdict": "accept"},
    })
    flow.annotation_submit(annotation_id=item.pk, actor=annotator, base_version=item.version)
    flow.review_claim(annotation_id=item.pk, actor=reviewer)
    flow.review_return(annotation_id=item.pk, actor=reviewer, units=[
        {"unit": "overview", "comment": "The camera pans; nothing slides. Say so, please, in the overview."},
        {"unit": "window:1", "comment": "Is the square really gliding? Watch the hills behind it."},
    ])
    page = sign_in("annotator", "pw-annotator")
    page.set_viewport_size(LAPTOP)
    open_workspace(page, live_server, pan)
    banner = page.locator("#return-banner").bounding_box()
    assert banner["height"] <= 60, banner
    assert_fits(page, "returned", "#return-banner", "#accept", "#reject", "#original-overview", "#lock-overview")
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    assert_fits(page, "returned-reject", "#overview-text", "#mode-factual", "#checks", "#lock-overview")

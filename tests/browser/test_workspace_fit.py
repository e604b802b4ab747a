"""The workspace fits a laptop screen: at 1280×720 the decision area needs no scrolling."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_workspace import open_workspace, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 720}


def assert_fits(page, *selectors: str):
    """Neither the page nor the panel scrolls, and each part of the decision is on screen."""
    height = page.evaluate("innerHeight")
    assert page.evaluate("document.documentElement.scrollHeight") <= height, "the page scrolls"
    for selector in selectors:
        box = page.locator(selector).bounding_box()
        assert box is not None, f"{selector} is not on the page"
        assert 0 <= box["y"] and box["y"] + box["height"] <= height, f"{selector} is off screen: {box}"


def test_the_decision_area_fits_1280_by_720_in_every_step(sign_in, live_server, annotation):
    page = sign_in("annotator", "pw-annotator")
    page.set_viewport_size(LAPTOP)
    open_workspace(page, live_server, annotation)

    page.keyboard.press("r")
    page.keyboard.type(" From zero to five.")
    page.keyboard.press("Escape")
    page.keyboard.press("1")
    assert_fits(page, "#reject", "#overview-text", "#overview-text-redline", "#modes", "#mode-temporal",
                "#lock-overview")
    # A mode's definition is one hover or focus away, over the page rather than in it.
    definition = page.locator("#mode-factual-definition")
    assert definition.is_hidden()
    page.locator("#mode-factual").focus()
    assert definition.is_visible() and "fact" in definition.inner_text().lower()
    page.keyboard.press("Escape")
    # A message floats: the panel does not move when one appears.
    top = page.locator("#panel").bounding_box()["y"]
    page.keyboard.press("]")  # says "Speed 1.25×"
    page.locator("#notice").wait_for(state="visible")
    assert page.locator("#panel").bounding_box()["y"] == top
    assert_fits(page, "#lock-overview")
    wait_saved(page)
    screenshot(page.context.pages[0], "workspace-laptop-overview")

    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    page.keyboard.press("r")
    page.keyboard.press("Escape")
    page.keyboard.press("2")
    assert_fits(page, "#reject", "#window-scene", "#window-shot-redline", "#window-start", "#window-end", "#modes",
                "#mode-temporal", "#submit")
    screenshot(page, "workspace-laptop-window")

    page.locator(".ws-chip[data-unit='3']").click()
    page.keyboard.press("r")
    page.keyboard.press("4")
    assert page.locator("#seg-scene-0").evaluate("node => node.tagName") == "TEXTAREA"
    assert_fits(page, "#reject", "#seg-start-0", "#seg-shot-0", "#modes", "#mode-segmentation", "#submit")
    wait_saved(page)
    screenshot(page, "workspace-laptop-segmentation")

    page.keyboard.press("?")
    assert "Factual error" in page.locator("#help-modes").inner_text()
    saving = page.locator("#help-saving").inner_text()
    assert "merged word by word" in saving and "end before its start" in saving

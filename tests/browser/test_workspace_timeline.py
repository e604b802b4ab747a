"""The workspace in headless Chromium: live redline offline, timeline, shot changes, player."""

from __future__ import annotations

import pytest

from scoring import edits
from tests.browser.conftest import screenshot
from tests.browser.test_workspace import ORIGINAL, open_workspace, wait_saved

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

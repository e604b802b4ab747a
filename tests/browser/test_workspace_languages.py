"""A Chinese study's workspace shows the server's edit size (the word segmenter runs there) and
says so; without the connection it says it is waiting for the server."""

from __future__ import annotations

import pytest

from scoring.metrics import edits
from tests.browser.conftest import screenshot
from tests.browser.test_workspace import ORIGINAL, open_workspace, wait_saved
from tests.conftest import in_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_chinese_studys_redline_shows_the_servers_words_and_says_so(
        sign_in, live_server, annotation):
    study = annotation.caption.clip.study
    with in_setup(study):  # the language is frozen once a study runs
        study.caption_language = "zh"
        study.save()
    page = sign_in("annotator", "pw-annotator")
    open_workspace(page, live_server, annotation)
    wait_saved(page)
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    typed = ORIGINAL + " 一个女人在骑红色自行车"  # English rules: 1 word added; Chinese: 6
    page.keyboard.type(typed)
    page.wait_for_selector("#overview-text-size [data-words]")
    expected = edits.edit_size(ORIGINAL, typed, language="zh")
    size = page.locator("#overview-text-size [data-words]")
    assert size.get_attribute("data-words") == str(expected.words_changed)
    assert expected.words_changed != edits.words_changed(ORIGINAL, typed)  # not the page's count
    assert "Edit size from the server (Chinese words" in page.locator(
        "#overview-text-size").inner_text()
    shown = [node.inner_text() for node in page.locator("#overview-text-redline ins").all()]
    assert shown == [s.text for s in edits.word_diff(ORIGINAL, typed, language="zh")
                     if s.op == "insert"]
    screenshot(page, "workspace-redline-chinese")

    page.context.set_offline(True)
    page.keyboard.type("了")
    page.wait_for_selector("#overview-text-size:has-text('cannot be reached')")

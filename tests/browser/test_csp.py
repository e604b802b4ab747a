"""Every page works under the Content-Security-Policy: Chromium reports no violation."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from annotation.services.workflow import annotations_assign
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def reviewed(study, personas):
    fake_clip(study, "a")
    fake_clip(study, "b")
    captions_add(study, [caption_record("a", SECRET_MODEL), caption_record("b", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    submitted = complete(Annotation.objects.get(caption__clip__name="a"), personas["annotator"])
    personas["admin"].is_staff = personas["admin"].is_superuser = True
    personas["admin"].save()
    return {"submitted": submitted, "new": Annotation.objects.get(caption__clip__name="b")}


def violations_on(page, url: str) -> list[str]:
    found: list[str] = []

    def listen(message) -> None:
        if "Content Security Policy" in message.text:
            found.append(message.text[:160])

    page.on("console", listen)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    page.remove_listener("console", listen)
    return found


def test_no_page_breaks_the_content_security_policy(sign_in, live_server, reviewed, page):
    base = live_server.url
    sign_in("admin", "pw-admin")
    pages = ["/", "/studies/s1/", "/studies/s1/clips/a/", "/studies/s1/review/",
             f"/review/{reviewed['submitted'].pk}/", "/studies/s1/progress/",
             "/studies/s1/profiles/", "/api/docs/", "/admin/", "/admin/annotation/study/"]
    problems = {path: violations_on(page, base + path) for path in pages}
    assert {path: found for path, found in problems.items() if found} == {}


def test_the_annotators_pages_keep_the_policy(sign_in, live_server, reviewed, page):
    base = live_server.url
    sign_in("annotator", "pw-annotator")
    new = reviewed["new"].pk
    found = violations_on(page, f"{base}/studies/s1/queue/")
    found += violations_on(page, f"{base}/annotate/{new}/")
    page.click("#start-work")
    page.wait_for_selector("#workspace[data-ready=true]")
    page.wait_for_load_state("networkidle")
    assert found == []
    # The queue's progress bar got its width from the script, not from a style attribute.
    page.goto(f"{base}/studies/s1/queue/")
    assert page.evaluate("document.querySelector('[data-percent]').style.width") == "50%"

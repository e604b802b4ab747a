"""axe-core over every page, in each role: no serious or critical violation of WCAG 2.1 A/AA
(colour contrast AA included).

axe (node_modules/axe-core, pinned in package-lock.json; `make lint` installs it with npm ci)
is put into each page with a script tag. The pages' Content-Security-Policy refuses inline
scripts, so these contexts alone bypass it (tests/browser/test_csp.py checks the policy holds).
"""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from annotation.services.workflow import annotations_assign, review_claim
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip
from tests.browser.conftest import wait_until
from tests.conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = {"serious", "critical"}
RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]},
         "resultTypes": ["violations"]}


@pytest.fixture(scope="session")
def axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"{AXE.relative_to(REPO)} is missing: run scripts/js-tools.sh (npm ci from package-lock.json)")
    return AXE.read_text()


@pytest.fixture(autouse=True)
def no_scoring(settings):
    settings.SCORING_ON_FINAL_VERDICT = False


@pytest.fixture
def worked(study, personas):
    """Clip a's caption submitted (for QC), clip b's assigned and new (for the workspace)."""
    fake_clip(study, "a")
    fake_clip(study, "b")
    captions_add(study, [caption_record("a", SECRET_MODEL), caption_record("b", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    submitted = complete(Annotation.objects.get(caption__clip__name="a"), personas["annotator"])
    return {"submitted": submitted, "new": Annotation.objects.get(caption__clip__name="b")}


@pytest.fixture
def as_role(browser, live_server):
    """A page signed in as `username`, in a context that lets axe's script in."""
    contexts = []

    def open_as(username: str, password: str | None = None, width: int = 1280):
        context = browser.new_context(viewport={"width": width, "height": 860}, bypass_csp=True)
        contexts.append(context)
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password or f"pw-{username}")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield open_as
    for context in contexts:
        context.close()


def serious_violations(page, axe_source: str) -> list[str]:
    """axe's serious and critical violations on the page as it is now, one line per element."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source)
    result = page.evaluate("(rules) => axe.run(document, rules)", RULES)
    return [
        f"{violation['id']} ({violation['impact']}): {' '.join(map(str, node['target']))} — "
        f"{(node.get('failureSummary') or '').strip().splitlines()[-1:]}"
        for violation in result["violations"]
        if violation["impact"] in SERIOUS
        for node in violation["nodes"]
    ]


def sweep(page, live_server, axe_source: str, paths: list[str], ready: dict[str, str] | None = None) -> dict:
    found = {}
    for path in paths:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        for prefix, selector in (ready or {}).items():
            if path.startswith(prefix):
                page.wait_for_selector(selector)
        found[path] = serious_violations(page, axe_source)
    return {path: problems for path, problems in found.items() if problems}


READY = {"/review/": "body[data-ready='true']", "/studies/s1/review/": "body[data-loaded='true']"}


def test_the_sign_in_page(page, browser, live_server, axe_source):
    context = browser.new_context(bypass_csp=True)
    try:
        anonymous = context.new_page()
        assert sweep(anonymous, live_server, axe_source, ["/login/"]) == {}
    finally:
        context.close()


def test_the_annotators_pages_including_the_workspace(as_role, live_server, worked, axe_source):
    page = as_role("annotator")
    new = worked["new"].pk
    paths = ["/", "/studies/s1/", "/studies/s1/queue/", "/studies/s1/clips/b/", "/studies/s1/withdraw/",
             f"/annotate/{new}/"]
    problems = sweep(page, live_server, axe_source, paths)
    page.click("#start-work")
    page.wait_for_selector("#workspace[data-ready=true]")
    page.wait_for_load_state("networkidle")
    problems["workspace"] = serious_violations(page, axe_source)
    page.keyboard.press("r")  # the editor of a rejected overview, with its redline
    page.keyboard.press("Escape")
    problems["workspace, rejecting"] = serious_violations(page, axe_source)
    page.keyboard.press("g")  # the study's guidelines in their side panel
    page.wait_for_selector("#guidelines-panel:not([hidden])")
    problems["workspace, guidelines"] = serious_violations(page, axe_source)
    # The withdrawal page once withdrawn (what was done, and the erasure offered).
    page.goto(f"{live_server.url}/studies/s1/withdraw/")
    page.get_by_label("I want to withdraw from").check()
    page.get_by_role("button", name="Withdraw").click()
    page.wait_for_selector("#withdrawn")
    problems["withdrawn"] = serious_violations(page, axe_source)
    assert {where: found for where, found in problems.items() if found} == {}


def test_the_reviewers_pages_in_each_state_of_the_review(as_role, live_server, worked, personas, axe_source):
    item = worked["submitted"]
    review_claim(annotation_id=item.pk, actor=personas["reviewer"])
    page = as_role("reviewer")
    paths = ["/", "/studies/s1/", "/studies/s1/review/", "/studies/s1/clips/a/", f"/review/{item.pk}/"]
    problems = sweep(page, live_server, axe_source, paths, READY)
    page.get_by_role("button", name="Return to annotator").click()
    page.get_by_label("Overview", exact=True).check()
    problems["review, returning"] = serious_violations(page, axe_source)
    page.keyboard.press("Escape")
    page.locator("body").press("e")
    page.wait_for_selector("#overview .amend-editor")
    wait_until(page, "document.body.dataset.ready === 'true'")
    problems["review, amending"] = serious_violations(page, axe_source)
    assert {where: found for where, found in problems.items() if found} == {}


def test_the_researchers_pages_and_the_progress_page_they_may_not_see(as_role, live_server, worked, axe_source):
    page = as_role("researcher")
    paths = ["/", "/studies/s1/", "/studies/s1/profiles/", "/studies/s1/clips/a/",
             "/studies/s1/annotator-quality/", "/studies/s1/work-log/"]
    problems = sweep(page, live_server, axe_source, paths)
    response = page.goto(f"{live_server.url}/studies/s1/progress/")
    assert response.status == 403
    assert "Only the study's admins see its progress" in page.locator("#forbidden-reason").inner_text()
    problems["progress (403)"] = serious_violations(page, axe_source)
    assert {where: found for where, found in problems.items() if found} == {}


def test_the_study_admins_pages(as_role, live_server, worked, axe_source):
    page = as_role("admin")
    paths = ["/", "/studies/s1/", "/studies/s1/progress/", "/studies/s1/profiles/", "/studies/s1/review/",
             f"/review/{worked['submitted'].pk}/", "/studies/s1/clips/a/",
             # Setting a study up: the New study page, its settings, members and history.
             "/studies/new/", "/studies/s1/settings/", "/studies/s1/members/", "/studies/s1/history/",
             # Gold items, the practice set and qualification; the guidelines.
             "/studies/s1/gold/", "/studies/s1/guidelines/",
             # How the people worked; paying the crowd participants.
             "/studies/s1/annotator-quality/", "/studies/s1/work-log/", "/studies/s1/payments/",
             "/studies/s1/payments/?rate=9.50"]
    ready = {**READY, "/studies/s1/progress/": "#agreement:not([hidden])"}
    assert sweep(page, live_server, axe_source, paths, ready) == {}


def test_the_profile_page_with_its_wide_tables(as_role, live_server, axe_source):
    """The profile's tables scroll sideways in their own regions (on a narrow window here), and
    those take the keyboard focus."""
    from playwright.sync_api import expect

    from tests.profiles.demo_run import demo_reviewed

    demo_reviewed()
    page = as_role("researcher", "redline-demo", width=800)
    page.goto(f"{live_server.url}/studies/demo/profiles/")
    page.wait_for_selector("#profile-form[data-ready=true]")
    page.get_by_label("Bootstrap resamples").fill("100")
    page.get_by_label("Adjusted-model resamples").fill("20")
    page.get_by_role("button", name="Build profile").click()
    expect(page.locator("#profile-step")).to_have_text("Done.", timeout=120_000)
    expect(page.locator("#profile-main-table tbody tr")).to_have_count(3)
    region = page.locator(".scroll:has(#profile-main-table)")
    assert region.evaluate("node => node.scrollWidth > node.clientWidth"), "the table does not overflow here"
    assert serious_violations(page, axe_source) == []


def test_a_practice_items_feedback_and_the_practice_queue(as_role, live_server, study, personas, axe_source):
    """The annotator's queue with its practice notice, and a submitted practice item's feedback."""
    from annotation.models import Caption
    from annotation.services import gold
    from annotation.services.workflow import annotation_start_next

    fake_clip(study, "c")
    captions_add(study, [caption_record("c", SECRET_MODEL)])
    admin, annotator = personas["admin"], personas["annotator"]
    item = gold.gold_start(study=study, actor=admin, caption_id=Caption.objects.get(clip__name="c").pk)
    complete(item.gold, admin)
    gold.practice_configure(study=study, actor=admin, practice_items=[item.pk],
                            settings={"practice_min_items": 1, "requires_qualification": True})
    page = as_role("annotator")
    problems = sweep(page, live_server, axe_source, ["/studies/s1/queue/"])
    practice = Annotation.objects.get(pk=annotation_start_next(study=study, annotator=annotator))
    complete(practice, annotator, overview={"verdict": "accept"})
    problems.update(sweep(page, live_server, axe_source, [f"/annotate/{practice.pk}/"],
                          {"/annotate/": "#practice-redline"}))
    assert problems == {}


def test_a_crowd_participants_pages(page, browser, live_server, worked, personas, axe_source):
    """A recruitment link's landing page, the queue it leads to, a refused id and the completion
    page, as a participant who has no account sees them."""
    from annotation.models import Annotation, Participant
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.recruitment import recruitment_link_create
    from tests.annotation.studybuild import complete
    from tests.conftest import CAPTION_B, jsonl

    study = worked["new"].caption.clip.study
    captions_import_jsonl(study=study, data=jsonl({**CAPTION_B, "model": "m-fresh"}))  # nobody's yet
    link, token = recruitment_link_create(study=study, actor=personas["admin"], cap=5, quota=1,
                                          completion_url=f"{live_server.url}/login/")
    context = browser.new_context(bypass_csp=True)
    try:
        participant = context.new_page()
        problems = sweep(participant, live_server, axe_source,
                         [f"/join/{token}/?PROLIFIC_PID=a11y0participant", f"/join/{token}/?PROLIFIC_PID=x%20y"])
        participant.goto(f"{live_server.url}/join/{token}/?PROLIFIC_PID=a11y0participant")
        participant.get_by_role("button", name="Start").click()
        participant.wait_for_url(f"{live_server.url}/studies/s1/queue/")
        problems["queue"] = serious_violations(participant, axe_source)
        joined = Participant.objects.get()
        for item in Annotation.objects.filter(annotator=joined.user):
            complete(item, joined.user)
        participant.goto(f"{live_server.url}/studies/s1/done/")
        problems["done"] = serious_violations(participant, axe_source)
        assert {where: found for where, found in problems.items() if found} == {}
    finally:
        context.close()


def test_the_profile_page_with_earlier_exports_to_delete(as_role, live_server, study, personas, axe_source):
    """The list of earlier exports, each with its Delete button, and the current one's."""
    from tests.profiles.fake_exports import an_export

    an_export(study, state="failed", created_at="2026-01-01T00:00:00+00:00")
    an_export(study, state="done", created_at="2026-01-02T00:00:00+00:00")
    an_export(study, state="done", created_at="2026-01-03T00:00:00+00:00")
    page = as_role("researcher")
    assert sweep(page, live_server, axe_source, ["/studies/s1/profiles/"]) == {}
    assert page.locator("#profile-earlier button.profile-delete").count() == 2
    assert page.get_by_role("button", name="Delete this export").is_visible()

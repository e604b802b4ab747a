"""Issue 29 end to end, through the pages like a person: trained, qualified and measured annotators.

From a study being set up with its clips and captions but nothing else (no guidelines, no gold,
no annotator): the admin writes guidelines with a failure-mode example on the Guidelines page and
invites an annotator on the Members page, who joins; once the study runs, the admin makes three
gold items in the ordinary workspace from the Gold page and sets qualification there (one practice
item, the pass rule, qualification required, a gold rate). The annotator fails the practice set
(the feedback shows the mode they missed), the admin allows a second attempt on the Gold page, the
annotator passes it and, in the real queue, meets a hidden gold check that looks like work. The
quality page and the work log show it all; the profile built on the Failure profile page leaves
the gold items out, and its sensitivity table appears. Screenshots: artifacts/screenshots/trained-*.

Steps done with the services, each said where it is: the study's creation and its clips and
captions (the New study and import pages have their own tests), the assignment of work and the
start (the assignment form and the setup checklist have theirs), the study's assignment seed
(settable while set up; chosen so that the annotator's first new item is preceded by a hidden gold
check: the draw is seeded, and tests/annotation/test_gold.py tests the rate itself), and the QC
approvals that make the final verdicts the profile reads (the review page has its own tests).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Annotation, Caption, CorrectionPass, GoldItem, GuidelineVersion, Qualification
from annotation.rules.gold import gold_check_due
from annotation.services.captions import captions_import_jsonl
from annotation.services.clips import clip_import_file
from annotation.services.lifecycle import study_start
from annotation.services.review import review_approve, review_claim
from annotation.services.studies import membership_grant, study_create
from annotation.services.workflow import annotations_assign
from scoring.profiles import tidy_tables
from tests.browser.conftest import screenshot
from tests.browser.test_run_your_own_study import invite, join
from tests.conftest import CAPTION_B, jsonl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODELS = ("m1", "m2", "m3")
GOLD_TEXT = "A test card with a counter."
GUIDELINES = "# Judging captions\n\nReject an overview that says more than the video shows (mode *factual*).\n"
RATE = 0.4
SLUG = "t29"


@pytest.fixture(autouse=True)
def no_scoring_per_verdict(settings):
    """Each final verdict would queue a scoring job (models load for minutes on these CPUs);
    scoring has its own tests."""
    settings.SCORING_ON_FINAL_VERDICT = False


def caption_a(model: str) -> dict:
    return {
        "clip": "a",
        "model": model,
        "overview": "A test card with a counter that counts up.",
        "windows": [
            {"start": 0, "end": 2, "scene": "Colour bars and a counter.", "shot": "Static frame."},
            {"start": 2, "end": 4, "scene": "The counter keeps running.", "shot": "Static frame."},
        ],
    }


def post_edit(page, *, correction: str, mode_key: str) -> None:
    """In the open workspace: reject the overview with `correction` and one failure mode (Alt+digit),
    accept every window and the segmentation, submit."""
    if page.get_by_role("button", name="Start").count():  # a new gold item opens on its start page
        page.get_by_role("button", name="Start").click()
    page.wait_for_selector("#workspace[data-ready=true]")
    item = Annotation.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))
    windows = item.caption.windows.count()
    page.keyboard.press("r")
    page.keyboard.press("Control+a")
    page.keyboard.type(correction)
    page.keyboard.press(mode_key)
    page.keyboard.press("Escape")
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#workspace[data-state=windows]")
    for unit in range(1, windows + 1):
        page.keyboard.press("a")
        page.wait_for_selector(f"#unit[data-unit='{unit}']")
    page.keyboard.press("a")  # the segmentation
    page.wait_for_selector("#save-status[data-status=saved]")
    page.keyboard.press("Control+Enter")


def start_next(page, live_server) -> Annotation:
    page.goto(f"{live_server.url}/studies/{SLUG}/queue/")
    # A click, not Enter: the button's autofocus does not reach a page in a background context.
    page.locator("#start-next").click()
    try:
        page.wait_for_url(f"{live_server.url}/annotate/*/")
    except Exception as error:
        screenshot(page, "trained-failed-queue")
        raise AssertionError(page.locator("main").inner_text()[:2000]) from error
    page.wait_for_selector("#workspace[data-ready=true]")
    return Annotation.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def test_trained_qualified_and_measured_annotators_from_an_empty_study(
    sign_in, live_server, browser, personas, clip_files
):
    admin_user, reviewer = personas["admin"], personas["reviewer"]
    # A study being set up, with its clips and captions (services: the New study page and the
    # import pages have their own tests), its QC reviewer and researcher, and nothing else.
    study = study_create(slug=SLUG, name="Trained annotators", state="setup", created_by=admin_user)
    for role in ("reviewer", "researcher"):
        membership_grant(study=study, user=personas[role], role=role)
    for name in ("a", "b"):
        clip_import_file(study=study, path=clip_files[name])
    captions_import_jsonl(
        study=study, data=jsonl(*(caption_a(m) for m in MODELS), *({**CAPTION_B, "model": m} for m in MODELS))
    )
    alias = {
        c.model.name: c.model.alias
        for c in Caption.objects.filter(clip__study=study, clip__name="a").select_related("model")
    }

    # 1. Guidelines with a failure-mode example, on the Guidelines page.
    admin = sign_in("admin", "pw-admin")
    admin.goto(f"{live_server.url}/studies/{SLUG}/guidelines/")
    admin.wait_for_selector("#guidelines-form[data-ready=true]")
    admin.get_by_label("Guidelines (Markdown)").fill(GUIDELINES)
    admin.get_by_role("button", name="Add an example").click()
    admin.get_by_label("Failure mode", exact=True).select_option(value="factual")
    admin.get_by_label("Caption excerpt").fill("a counter that counts up")
    admin.get_by_label("Correction", exact=True).fill("a counter")
    admin.get_by_label("Why this mode").fill("The counter never moves: saying it counts is a factual error.")
    admin.get_by_role("button", name="Save guidelines").click()
    expect(admin.locator("#g-result")).to_contain_text("Saved as version 1.")
    screenshot(admin, "trained-1-guidelines")

    # 2. An annotator invited on the Members page while the study is set up joins (their own browser).
    admin.goto(f"{live_server.url}/studies/{SLUG}/members/")
    link = invite(admin, "annotator", "Ana")
    context, ana = join(browser, live_server, link, "ana", SLUG)
    ana_user = type(admin_user).objects.get(username="ana")
    # The study's seed (settable while it is set up), chosen so that ana's first new item is
    # preceded by a hidden gold check: the draw is seeded, its rate is tested in test_gold.py.
    # The first item (slot 0) is a gold check and the second (slot 1) is work, whatever ana's id.
    seed = next(s for s in range(10_000) if gold_check_due(seed=s, annotator_id=ana_user.pk, slot=0, rate=RATE)
                and not gold_check_due(seed=s, annotator_id=ana_user.pk, slot=1, rate=RATE))
    type(study).objects.filter(pk=study.pk).update(assignment_seed=seed)
    # Work for ana (services: the assignment form has its own tests): a caption of clip b.
    annotations_assign(
        study=study, annotators=[ana_user], captions=list(Caption.objects.filter(clip__name="b", clip__study=study))
    )
    # Started (the service: the setup checklist's Start button has its own tests).
    study = study_start(study=study, actor=admin_user, confirm=True)
    assert study.state == "running"

    # 3. Three gold items, each made in the ordinary workspace from the Gold page.
    for model in MODELS:
        admin.goto(f"{live_server.url}/studies/{SLUG}/gold/")
        admin.get_by_label("Clip").fill("a")
        admin.get_by_label("Model (alias)").fill(alias[model])
        admin.get_by_role("button", name="Make gold and open the workspace").click()
        admin.wait_for_load_state()
        assert "/annotate/" in admin.url, admin.locator("main").inner_text()[:2000]
        post_edit(admin, correction=GOLD_TEXT, mode_key="Alt+1")
        admin.wait_for_selector("#workspace[data-state=done]")
    assert GoldItem.objects.filter(study=study).count() == 3
    assert all(g.gold.state != "in_progress" for g in GoldItem.objects.filter(study=study))
    # Verdicts record the guideline version they were made under.
    made_under = CorrectionPass.objects.filter(annotation__purpose="gold", kind=CorrectionPass.Kind.ANNOTATOR)
    assert set(made_under.values_list("guideline_version", flat=True)) == {GuidelineVersion.objects.get(study=study).pk}

    # 4. Qualification on the Gold page: one practice item, its pass rule, required, a gold rate.
    admin.goto(f"{live_server.url}/studies/{SLUG}/gold/")
    admin.get_by_label(f"In the practice set: a by {alias['m1']}").check()
    admin.get_by_label("Require qualification").check()
    admin.get_by_label("Minimum practice items").fill("1")
    admin.get_by_label("Minimum overview agreement").fill("0.8")
    admin.get_by_label("Minimum failure-mode F1").fill("0.5")
    admin.get_by_label("Minimum window agreement").fill("0.7")
    admin.get_by_label("Gold rate").fill(str(RATE))
    admin.get_by_role("button", name="Save the practice set and rule").click()
    expect(admin.locator("#gold-pool")).to_contain_text("a pool of 2 ready gold items")
    screenshot(admin, "trained-2-gold-page")
    study.refresh_from_db()
    assert study.requires_qualification and study.gold_rate == RATE

    # 5. The practice set, first attempt: the right verdict but the wrong mode. Failed, with feedback.
    practice = start_next(ana, live_server)
    assert practice.purpose == "practice"
    expect(ana.locator("#practice-feedback")).to_contain_text("Practice item.")
    post_edit(ana, correction="A test card.", mode_key="Alt+2")
    ana.wait_for_selector("#practice-redline")
    expect(ana.locator("#practice-modes")).to_contain_text("factual (overview)")
    expect(ana.locator("#practice-result")).to_have_attribute("data-state", "failed")
    screenshot(ana, "trained-3-practice-failed")
    assert Qualification.objects.get(study=study, user=ana_user).state == "failed"
    ana.goto(f"{live_server.url}/studies/{SLUG}/queue/")
    expect(ana.get_by_role("button", name="Start next")).to_be_disabled()  # no real work before qualifying

    # 6. The admin allows a second attempt on the Gold page.
    admin.goto(f"{live_server.url}/studies/{SLUG}/gold/")
    row = admin.locator('#qualifications tr[data-user="ana"]')
    expect(row).to_contain_text("failed")
    row.get_by_role("button", name="Allow another attempt").click()
    expect(admin.locator('#qualifications tr[data-user="ana"]')).to_contain_text("1 of 2")

    # 7. The second attempt agrees with the gold verdict: passed.
    again = start_next(ana, live_server)
    assert again.purpose == "practice" and again.pk != practice.pk
    post_edit(ana, correction=GOLD_TEXT, mode_key="Alt+1")
    ana.wait_for_selector("#practice-redline")
    expect(ana.locator("#practice-result")).to_have_attribute("data-state", "passed")
    screenshot(ana, "trained-4-practice-passed")
    assert Qualification.objects.get(study=study, user=ana_user).state == "passed"

    # 8. The real queue: a hidden gold check first, looking like work (no practice feedback).
    check = start_next(ana, live_server)
    assert check.purpose == "gold_check" and check.caption.clip.name == "a"
    expect(ana.locator("#practice-feedback")).to_have_count(0)
    assert "gold" not in ana.locator("#workspace").inner_text().lower()
    post_edit(ana, correction=GOLD_TEXT, mode_key="Alt+1")
    ana.wait_for_selector("#workspace[data-state=done]")
    screenshot(ana, "trained-5-hidden-gold-check")
    work = []
    for _ in range(1):  # the design gives a person one caption of a clip: clip b's by one model
        item = start_next(ana, live_server)
        assert item.purpose == "work" and item.caption.clip.name == "b"
        post_edit(ana, correction="A test card with a counter that stops.", mode_key="Alt+1")
        ana.wait_for_selector("#workspace[data-state=done]")
        work.append(item)
    context.close()
    # QC approves the gold check and the work (services: the review page has its own tests).
    for item in (check, *work):
        review_claim(annotation_id=item.pk, actor=reviewer)
        review_approve(annotation_id=item.pk, actor=reviewer)

    # 9. The quality page and the work log show it all.
    admin.goto(f"{live_server.url}/studies/{SLUG}/annotator-quality/")
    mine = admin.locator('#annotator-quality tr[data-person="ana"]')
    expect(mine.locator('td[data-key="practice"]')).to_have_text("passed")
    expect(mine.locator('td[data-key="practice_attempts"]')).to_have_text("2")
    expect(mine.locator('td[data-key="gold_checks"]')).to_have_text("1")
    # Items done are work only: the gold check and the practice attempts are counted apart.
    expect(mine.locator('td[data-key="items_done"]')).to_have_text("1")
    screenshot(admin, "trained-6-annotator-quality")
    admin.goto(f"{live_server.url}/studies/{SLUG}/work-log/")
    log = admin.locator("#work-log")
    expect(log.locator("tbody tr", has_text="gold check")).not_to_have_count(0)
    admin.locator("#filter-person").select_option("ana")
    admin.locator("#work-log-filters button").click()
    texts = log.locator("tbody tr").all_inner_texts()
    assert texts and all("ana" in text for text in texts)
    assert any("practice" in text for text in texts) and any("gold check" in text for text in texts)
    screenshot(admin, "trained-7-work-log")

    # 10. The profile, built on the Failure profile page, leaves the gold items out; its
    # sensitivity table appears.
    captions, _windows = tidy_tables(study)
    assert list(captions["clip"]) == ["b"]  # the work item, no gold caption (clip a)
    researcher = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    researcher.goto(f"{live_server.url}/login/")
    researcher.get_by_label("Username").fill("researcher")
    researcher.get_by_label("Password").fill("pw-researcher")
    researcher.keyboard.press("Enter")
    researcher.wait_for_url(f"{live_server.url}/")
    researcher.goto(f"{live_server.url}/studies/{SLUG}/profiles/")
    researcher.wait_for_selector("#profile-form[data-ready=true]")
    researcher.get_by_label("Bootstrap resamples").fill("200")
    researcher.get_by_label("Adjusted-model resamples").fill("40")
    researcher.get_by_role("button", name="Build profile").click()
    expect(researcher.locator("#profile-step")).to_have_text("Done.", timeout=180_000)
    expect(researcher.locator("#profile-sensitivity-section")).to_be_visible()
    expect(researcher.locator("#profile-sensitivity tbody tr")).not_to_have_count(0)
    # The corrected captions count the work's final verdict only: not the approved gold check's.
    gold_model = check.caption.model.name
    work_model = work[0].caption.model.name
    assert gold_model != work_model
    expect(researcher.locator(f'#corrected-captions tr[data-model="{work_model}"] td.num')).to_have_text("1")
    expect(researcher.locator(f'#corrected-captions tr[data-model="{gold_model}"] td.num')).to_have_text("0")
    screenshot(researcher, "trained-8-profile-sensitivity")
    researcher.context.close()

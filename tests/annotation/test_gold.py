"""Gold verdicts, the practice set with qualification, and hidden gold checks, over the API and
the services (annotation.services.gold), on the database the suite runs on (PostgreSQL in
`make test`)."""

from __future__ import annotations

import pandas as pd
import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, Caption, GoldItem, Qualification, Study
from annotation.selectors.annotator_quality import gold_drift
from annotation.selectors.counted import counted_annotations
from annotation.selectors.work_log import people_of
from annotation.services import gold
from annotation.services.review import review_approve, review_claim
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotation_start_next, annotations_assign
from scoring.profiles import tidy_tables
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

CLIPS = ["a", "b", "c", "d", "e", "f"]
WRONG = {"verdict": "accept"}


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def world(study, personas, make_user):
    """Six clips with one caption each; `expert` is the study's gold expert."""
    for name in CLIPS:
        fake_clip(study, name)
    captions = captions_add(study, [caption_record(name) for name in CLIPS])
    expert = make_user("expert")
    membership_grant(study=study, user=expert, role="expert")
    return {"study": study, "captions": {c.clip.name: c for c in captions}, "expert": expert, **personas}


def make_gold(world, clip: str, maker=None, caption_id=None, **verdict) -> GoldItem:
    """A gold item of the caption of `clip`, its verdict made by `maker` (the admin) through
    the API and the workspace's services: the default verdict of studybuild.complete."""
    maker = maker or world["admin"]
    caption_id = caption_id or world["captions"][clip].pk
    answer = client_for(maker).post("/api/studies/s1/gold/", {"caption": caption_id}, format="json")
    assert answer.status_code == 201, answer.json()
    item = GoldItem.objects.get(pk=answer.json()["id"])
    complete(item.gold, maker, **verdict)
    return item


def approve(annotation, reviewer):
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    return review_approve(annotation_id=annotation.pk, actor=reviewer)


# --------------------------------------------------------------------------- gold verdicts


def test_an_admin_and_an_expert_make_gold_verdicts_in_the_workspace(world):
    admin, expert = world["admin"], world["expert"]
    item = make_gold(world, "a")
    assert item.gold.purpose == "gold" and item.gold.annotator == admin
    answer = client_for(expert).post("/api/studies/s1/gold/", {"caption": world["captions"]["b"].pk}, format="json")
    assert answer.status_code == 201
    row = answer.json()
    assert row["model"] == "Model A" and row["ready"] is False and row["url"] == f"/annotate/{row['annotation']}/"
    # The expert (no annotator role) works the gold verdict in the ordinary workspace.
    browser = Client()
    browser.force_login(expert)
    page = browser.get(row["url"])
    assert page.status_code == 200 and b"Zebrafish" not in page.content
    complete(Annotation.objects.get(pk=row["annotation"]), expert)
    listed = client_for(admin).get("/api/studies/s1/gold/").json()
    assert [i["ready"] for i in listed["items"]] == [True, True]
    assert "Zebrafish" not in str(listed)  # blind: aliases only


def test_gold_refusals_name_the_caption(world):
    admin = world["admin"]
    make_gold(world, "a")
    again = client_for(world["expert"]).post(
        "/api/studies/s1/gold/", {"caption": world["captions"]["a"].pk}, format="json"
    )
    assert again.status_code == 400 and "gold item already" in again.json()["caption"][0]
    unknown = client_for(admin).post("/api/studies/s1/gold/", {"caption": 999999}, format="json")
    assert unknown.status_code == 400 and "has no caption 999999" in unknown.json()["caption"][0]
    # Who annotated a caption does not make its gold verdict.
    annotations_assign(study=world["study"], annotators=[world["annotator"]], captions=[world["captions"]["b"]])
    membership_grant(study=world["study"], user=world["annotator"], role="expert")
    mine = client_for(world["annotator"]).post(
        "/api/studies/s1/gold/", {"caption": world["captions"]["b"].pk}, format="json"
    )
    assert mine.status_code == 400 and "must be someone else's" in mine.json()["caption"][0]
    assert GoldItem.objects.count() == 1
    for persona in ("annotator", "reviewer", "researcher"):
        if persona == "annotator":
            continue  # now an expert too
        assert client_for(world[persona]).get("/api/studies/s1/gold/").status_code == 403


def test_gold_verdicts_are_not_reviewed_and_gold_captions_are_not_assigned(world):
    item = make_gold(world, "a")
    assert not counted_annotations(Annotation.objects.filter(pk=item.gold_id)).exists()
    queue = client_for(world["reviewer"]).get("/api/studies/s1/review-queue/").json()
    assert queue["count"] == 0
    claim = client_for(world["reviewer"]).post(f"/api/annotations/{item.gold_id}/claim/")
    assert claim.status_code in (400, 403)
    report = annotations_assign(study=world["study"], annotators=[world["annotator"]])
    assert report.created == len(CLIPS) - 1
    assert not Annotation.objects.filter(caption=item.caption, purpose="work").exists()


def test_gold_verdicts_are_imported_in_the_bundle_annotation_format(world):
    import json

    good = {
        "clip": "a",
        "model": "Model A",
        "passes": {
            "annotator": {
                "overview": {"verdict": "reject", "text": "A card with a counter.", "modes": ["factual"]},
                "windows": [
                    {"index": 0, "verdict": "accept", "scene": "", "shot": "", "start": 0, "end": 2, "modes": []},
                    {"index": 1, "verdict": "accept", "scene": "", "shot": "", "start": 2, "end": 4, "modes": []},
                    {"index": 2, "verdict": "accept", "scene": "", "shot": "", "start": 4, "end": 6, "modes": []},
                ],
                "segmentation": {"verdict": "accept", "modes": [], "windows": []},
            }
        },
    }
    bad = {
        **good,
        "clip": "b",
        "passes": {"annotator": {**good["passes"]["annotator"], "overview": {"verdict": "reject", "modes": []}}},
    }
    client = client_for(world["admin"])

    def post(*records):
        from django.core.files.uploadedfile import SimpleUploadedFile

        data = "\n".join(json.dumps(r) for r in records).encode()
        return client.post(
            "/api/studies/s1/gold/import/", {"file": SimpleUploadedFile("gold.jsonl", data)}, format="multipart"
        )

    refused = post(good, bad, {"clip": "zz", "model": "Model A", "passes": {"annotator": {}}})
    assert refused.status_code == 400
    detail = refused.json()["detail"]
    assert "line 2:" in detail and "line 3:" in detail and "no caption" in detail
    assert GoldItem.objects.count() == 0  # all or nothing
    stored = post(good)
    assert stored.status_code == 201 and stored.json()["stored"] == 1
    item = GoldItem.objects.get()
    assert item.source == "import" and item.gold.state == "submitted"
    assert gold.gold_pass(item)["overview"]["modes"] == ["factual"]


# --------------------------------------------------------------------------- the profile


def test_the_profile_of_a_study_with_gold_items_equals_the_profile_without_them(world):
    study, annotator, reviewer = world["study"], world["annotator"], world["reviewer"]
    captions = world["captions"]
    annotations_assign(study=study, annotators=[annotator], captions=[captions["a"], captions["b"]])
    for annotation in Annotation.objects.filter(annotator=annotator).order_by("pk"):
        approve(complete(annotation, annotator), reviewer)
    before_captions, before_windows = tidy_tables(study)
    # Gold items, a practice attempt and an approved hidden gold check on other captions...
    item = make_gold(world, "c")
    make_gold(world, "d")
    check = Annotation.objects.create(
        caption=item.caption, annotator=annotator, taxonomy=study.taxonomy, purpose="gold_check"
    )
    approve(complete(check, annotator), reviewer)
    practice = Annotation.objects.create(
        caption_id=GoldItem.objects.get(caption__clip__name="d").caption_id,
        annotator=annotator,
        taxonomy=study.taxonomy,
        purpose="practice",
    )
    complete(practice, annotator)
    after_captions, after_windows = tidy_tables(study)
    pd.testing.assert_frame_equal(before_captions, after_captions)
    pd.testing.assert_frame_equal(before_windows, after_windows)
    # ...and a caption made gold after its work was approved leaves the profile.
    membership_grant(study=study, user=world["expert"], role="expert")
    client_for(world["expert"]).post("/api/studies/s1/gold/", {"caption": captions["a"].pk}, format="json")
    assert list(tidy_tables(study)[0]["clip"]) == ["b"]


# --------------------------------------------------------------------------- practice and qualification


def practice_world(world, *, required=True, min_items=2):
    items = [make_gold(world, clip) for clip in ("a", "b")]
    answer = client_for(world["admin"]).patch(
        "/api/studies/s1/practice/",
        {
            "practice_items": [item.pk for item in items],
            "requires_qualification": required,
            "practice_min_items": min_items,
        },
        format="json",
    )
    assert answer.status_code == 200, answer.json()
    annotations_assign(
        study=world["study"], annotators=[world["annotator"]], captions=[world["captions"][c] for c in ("c", "d", "e")]
    )
    return items


def test_practice_set_refusals_store_nothing(world):
    client = client_for(world["admin"])
    item = make_gold(world, "a")
    unready = client.post("/api/studies/s1/gold/", {"caption": world["captions"]["b"].pk}, format="json").json()
    cases = [
        ({"requires_qualification": True}, "requires_qualification", "Qualification needs a practice set"),
        ({"practice_items": [unready["id"]]}, "practice_items", "no submitted gold verdict"),
        ({"practice_items": [123456]}, "practice_items", "is not one of study"),
        ({"practice_items": [item.pk], "practice_min_items": 2}, "practice_min_items", "holds 1"),
        ({"practice_min_mode_f1": 1.5}, "practice_min_mode_f1", "must lie in [0, 1]"),
        ({"practice_min_items": 0}, "practice_min_items", "from 1 to 200"),
        ({"gold_rate": 0.6}, "gold_rate", "must lie in [0, 0.5]"),
        (
            {"gold_rate": 0.05, "practice_items": [item.pk], "practice_min_items": 1},
            "gold_rate",
            "no gold items outside the practice set",
        ),
        ({"colour": "red"}, "colour", "not a gold or qualification setting"),
    ]
    before = Study.objects.values().get(pk=world["study"].pk)
    for body, field, words in cases:
        answer = client.patch("/api/studies/s1/practice/", body, format="json")
        assert answer.status_code == 400, body
        assert words in answer.json()[field][0], (body, answer.json())
    assert Study.objects.values().get(pk=world["study"].pk) == before
    assert not GoldItem.objects.filter(in_practice_set=True).exists()


def test_an_annotator_fails_practice_gets_feedback_and_passes_a_second_attempt(world):
    study, annotator, admin = world["study"], world["annotator"], world["admin"]
    practice_world(world)
    client = client_for(annotator)
    queue = client.get("/api/studies/s1/my-queue/").json()
    assert queue["total"] == 0  # real work waits for qualification
    # An admin pressing Start next does not practise.
    assert client_for(admin).post("/api/studies/s1/my-queue/next/").status_code == 404
    assert not Qualification.objects.filter(user=admin).exists()
    page = page_client(annotator).get("/studies/s1/queue/")
    assert page.context["practice_due"] is True
    assert "starts with a practice set of 2 items. You receive real work once you pass it." in page.content.decode()
    first = client.post("/api/studies/s1/my-queue/next/").json()
    annotation = Annotation.objects.get(pk=first["id"])
    assert annotation.purpose == "practice" and annotation.attempt == 1
    assert [item["id"] for item in client.get("/api/studies/s1/my-queue/").json()["items"]][0] == annotation.pk
    # Accepting everything the gold verdict rejected: verdicts disagree, modes missed.
    complete(annotation, annotator, overview=WRONG)
    feedback = client.get(f"/api/annotations/{annotation.pk}/practice-feedback/").json()
    assert feedback["comparison"]["overview"] == {"gold": "reject", "yours": "accept", "agree": False}
    assert {"unit": "overview", "mode": "factual"} in feedback["comparison"]["modes"]["missed"]
    assert feedback["overview"]["gold"] == "A test card with a counter."
    assert feedback["overview"]["edit_size"]["words_changed"] > 0
    assert {"op": "delete", "text": "counter that counts up."} in [
        {"op": s["op"], "text": s["text"].strip()} for s in feedback["overview"]["redline"]
    ]
    assert feedback["finished"] is False and feedback["qualification"] is None
    second = client.post("/api/studies/s1/my-queue/next/").json()
    complete(Annotation.objects.get(pk=second["id"]), annotator, overview=WRONG)
    qualification = Qualification.objects.get(study=study, user=annotator)
    assert qualification.state == "failed"
    last = client.get(f"/api/annotations/{second['id']}/practice-feedback/").json()
    assert last["finished"] and last["qualification"]["state"] == "failed"
    assert any(
        "Overview verdicts agreed with the gold ones on 0 %" in r for r in last["qualification"]["result"]["failed"]
    )
    # No real work, no further attempt until an admin allows one.
    nothing = client.post("/api/studies/s1/my-queue/next/")
    assert nothing.status_code == 404 and "did not pass the practice set" in nothing.json()["detail"]
    assert page_client(annotator).get("/studies/s1/queue/").context["practice_due"] is False
    mine = client.get("/api/studies/s1/practice/mine/").json()
    assert mine["state"] == "failed" and mine["may_retry"] is False
    work = Annotation.objects.filter(annotator=annotator, purpose="work").first()
    refused = client.post(f"/api/annotations/{work.pk}/open/")
    assert refused.status_code == 403 and "pass the practice set" in refused.json()["detail"]
    assert client_for(annotator).post("/api/studies/s1/practice/qualifications/annotator/retry/").status_code == 403
    retry = client_for(admin).post("/api/studies/s1/practice/qualifications/annotator/retry/")
    assert retry.status_code == 200 and retry.json()["may_retry"] is True
    # Attempt 2: the same items, new rows; the gold verdict's own pass this time.
    for _ in range(2):
        opened = client.post("/api/studies/s1/my-queue/next/").json()
        row = Annotation.objects.get(pk=opened["id"])
        assert row.purpose == "practice" and row.attempt == 2
        complete(row, annotator)
    qualification.refresh_from_db()
    assert qualification.state == "passed" and qualification.result["overview_agreement"] == 1.0
    history = client_for(admin).get("/api/studies/s1/history/").json()
    assert {"practice_configure", "practice_retry_allow"} <= {event["action"] for event in history}
    listed = client_for(admin).get("/api/studies/s1/practice/qualifications/").json()
    assert [(q["user"], q["state"], q["attempts"]) for q in listed] == [("annotator", "passed", 2)]
    # Now real work.
    real = client.post("/api/studies/s1/my-queue/next/").json()
    assert Annotation.objects.get(pk=real["id"]).purpose == "work"
    assert client.get("/api/studies/s1/my-queue/").json()["total"] == 3 + 4


def test_without_required_qualification_practice_comes_first_then_work(world):
    practice_world(world, required=False)
    client = client_for(world["annotator"])
    assert client.get("/api/studies/s1/my-queue/").json()["total"] == 3
    first = Annotation.objects.get(pk=client.post("/api/studies/s1/my-queue/next/").json()["id"])
    assert first.purpose == "practice"
    complete(first, world["annotator"], overview=WRONG)
    complete(
        Annotation.objects.get(pk=client.post("/api/studies/s1/my-queue/next/").json()["id"]),
        world["annotator"],
        overview=WRONG,
    )
    assert Qualification.objects.get(user=world["annotator"]).state == "failed"
    assert Annotation.objects.get(pk=client.post("/api/studies/s1/my-queue/next/").json()["id"]).purpose == "work"


def test_feedback_is_for_practice_items_of_their_annotator(world):
    practice_world(world)
    client = client_for(world["annotator"])
    opened = client.post("/api/studies/s1/my-queue/next/").json()
    early = client.get(f"/api/annotations/{opened['id']}/practice-feedback/")
    assert early.status_code == 400 and "Submit this practice item first" in early.json()["detail"]
    assert client_for(world["reviewer"]).get(f"/api/annotations/{opened['id']}/practice-feedback/").status_code == 403
    work = Annotation.objects.filter(purpose="work").first()
    assert client_for(world["admin"]).get(f"/api/annotations/{work.pk}/practice-feedback/").status_code == 404


# --------------------------------------------------------------------------- hidden gold checks


def predicted(seed: int, annotator_id: int, *, work: int, pool: int, rate: float = 1 / 3) -> list[str]:
    """The purposes of the items Start next opens, by annotation.rules.gold.gold_check_due: a
    gold check where the slot's draw says so and the pool holds one, else the next real item."""
    from annotation.rules.gold import gold_check_due

    purposes, slot = [], 0
    while work:
        if pool and gold_check_due(seed=seed, annotator_id=annotator_id, slot=slot, rate=rate):
            purposes.append("gold_check")
            pool -= 1
        else:
            purposes.append("work")
            work -= 1
        slot += 1
    return purposes


def test_hidden_gold_checks_look_like_work_and_stop_when_the_pool_runs_out(world, make_user):
    study = world["study"]
    make_gold(world, "a")
    make_gold(world, "b")
    # The draw is the pure rule's, from the study's seed and the annotator: an annotator whose
    # draws meet the whole pool of two before their four items end (half of them do).
    for n in range(40):
        annotator = make_user(f"checked{n}")
        if predicted(study.assignment_seed, annotator.pk, work=4, pool=2).count("gold_check") == 2:
            break
    else:
        pytest.fail(f"no annotator of 40 draws two gold checks from seed {study.assignment_seed}")
    membership_grant(study=study, user=annotator, role="annotator")
    annotations_assign(study=study, annotators=[annotator], captions=[world["captions"][c] for c in "cdef"])
    answer = client_for(world["admin"]).patch("/api/studies/s1/practice/", {"gold_rate": 0.5}, format="json")
    assert answer.status_code == 400 and "at most 33.3 %" in answer.json()["gold_rate"][0]
    assert (
        client_for(world["admin"]).patch("/api/studies/s1/practice/", {"gold_rate": 1 / 3}, format="json").status_code
        == 200
    )
    client = client_for(annotator)
    opened = []
    while True:
        started = client.post("/api/studies/s1/my-queue/next/")
        if started.status_code == 404:
            break
        row = Annotation.objects.get(pk=started.json()["id"])
        opened.append(row)
        complete(row, annotator)
    purposes = [row.purpose for row in opened]
    assert purposes == predicted(study.assignment_seed, annotator.pk, work=4, pool=2)
    assert purposes.count("work") == 4 and purposes.count("gold_check") == 2  # the pool of two, then work
    study.refresh_from_db()
    assert gold.gold_pool_status(study)["exhausted_for"] == [annotator.username]
    check = next(row for row in opened if row.purpose == "gold_check")
    work = next(row for row in opened if row.purpose == "work")
    a, b = (client.get(f"/api/annotations/{row.pk}/").json() for row in (check, work))
    assert sorted(a) == sorted(b)
    assert a["caption"]["model"].startswith("Model ") and b["caption"]["model"].startswith("Model ")
    assert set(a["clip"]) == set(b["clip"]) and sorted(a["annotator_pass"]) == sorted(b["annotator_pass"])
    queue = client.get("/api/studies/s1/my-queue/").json()
    assert sorted(queue["items"][0]) == sorted(next(i for i in queue["items"] if i["id"] == check.pk))
    assert all(set(item) == set(queue["items"][0]) for item in queue["items"])
    # Gold checks are reviewed like work, but never by the gold verdict's maker.
    reviewer_queue = client_for(world["reviewer"]).get("/api/studies/s1/review-queue/").json()
    assert check.pk in [item["id"] for item in reviewer_queue["items"]]
    membership_grant(study=study, user=world["admin"], role="reviewer")
    admin_queue = client_for(world["admin"]).get("/api/studies/s1/review-queue/").json()
    assert check.pk not in [item["id"] for item in admin_queue["items"]]
    assert drift_of(study) == []  # two right checks, fewer than the small-sample minimum anyway
    # The dashboard says the pool ran out for them. Gold checks they got wrong drag them below the
    # drift threshold; the gold page and the dashboard apply one rule (at least MIN_ITEMS of the last
    # RECENT_CHECKS gold checks) and so name the same people, or nobody.
    dashboard = page_client(world["admin"]).get("/studies/s1/").content.decode()
    assert f"The gold pool has run out for {annotator.username}" in dashboard

    def wrong_check(clip):
        fake_clip(study, clip)
        captions_add(study, [caption_record(clip)])
        late = make_gold(world, clip, caption_id=Caption.objects.get(clip__name=clip).pk)
        wrong = Annotation.objects.create(
            caption=late.caption, annotator=annotator, taxonomy=study.taxonomy, purpose="gold_check"
        )
        complete(wrong, annotator, overview=WRONG)

    for clip in ("g", "h"):
        wrong_check(clip)
    # Four checks, two wrong: below the threshold, but too few to warn on either page.
    assert drift_of(study) == []
    for url in ("/studies/s1/", "/studies/s1/gold/"):
        assert 'id="gold-drift"' not in page_client(world["admin"]).get(url).content.decode()
    wrong_check("i")
    assert drift_of(study) == [{"person": annotator.username, "recent": 2 / 5, "checks": 5}]
    for url in ("/studies/s1/", "/studies/s1/gold/"):
        page = page_client(world["admin"]).get(url).content.decode()
        assert f"{annotator.username}: 40% of the last 5 gold checks" in page, url
    # A gold check beside its gold verdict is no double annotation for the agreement statistics.
    from annotation.selectors.progress import double_annotated_captions

    assert double_annotated_captions(study=study) == 0


def test_the_gold_maker_never_meets_their_item_as_a_check(world):
    study, expert = world["study"], world["expert"]
    membership_grant(study=study, user=expert, role="annotator")
    make_gold(world, "a", maker=expert)
    annotations_assign(study=study, annotators=[expert], captions=[world["captions"][c] for c in "cd"])
    Study.objects.filter(pk=study.pk).update(gold_rate=0.5)
    study.refresh_from_db()
    for _ in range(2):
        annotation_id = annotation_start_next(study=study, annotator=expert)
        row = Annotation.objects.get(pk=annotation_id)
        assert row.purpose == "work"
        complete(row, expert)


# --------------------------------------------------------------------------- the study's lifecycle


def test_a_closed_study_takes_no_gold_or_practice_change(world):
    from annotation.services.lifecycle import study_close

    item = make_gold(world, "a")
    study_close(study=world["study"], actor=world["admin"], confirm=True)
    client = client_for(world["admin"])
    assert (
        client.post("/api/studies/s1/gold/", {"caption": world["captions"]["b"].pk}, format="json").status_code == 409
    )
    assert client.patch("/api/studies/s1/practice/", {"practice_items": [item.pk]}, format="json").status_code == 409
    assert client.get("/api/studies/s1/practice/").status_code == 200
    assert not GoldItem.objects.filter(in_practice_set=True).exists()


# --------------------------------------------------------------------------- the pages


def drift_of(study):
    return gold_drift(study=study, people=people_of(study, by_name=True))


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_gold_page_makes_gold_items_and_sets_the_practice_rule(world):
    admin = page_client(world["admin"])
    made = admin.post("/studies/s1/gold/", {"action": "make", "clip": "a", "model": "Model A"})
    item = GoldItem.objects.get()
    assert made.status_code == 302 and made["Location"] == f"/annotate/{item.gold_id}/"
    complete(item.gold, world["admin"])
    page = admin.get("/studies/s1/gold/")
    assert page.status_code == 200 and b"Zebrafish" not in page.content
    assert f'data-gold="{item.pk}"'.encode() in page.content
    form = {
        "action": "practice",
        "practice_item": [str(item.pk)],
        "requires_qualification": "on",
        "practice_min_items": "1",
        "practice_min_overview_agreement": "lots",
        "practice_min_mode_f1": "0.5",
        "practice_min_window_agreement": "0.7",
        "gold_rate": "0",
        "gold_drift_threshold": "0.7",
    }
    bad = admin.post("/studies/s1/gold/", form)
    assert bad.status_code == 400 and b"practice_min_overview_agreement" in bad.content
    assert not Study.objects.get(pk=world["study"].pk).requires_qualification
    good = admin.post("/studies/s1/gold/", {**form, "practice_min_overview_agreement": "0.9"})
    assert good.status_code == 302
    study = Study.objects.get(pk=world["study"].pk)
    assert study.requires_qualification and study.practice_min_overview_agreement == 0.9
    assert GoldItem.objects.get().in_practice_set
    assert page_client(world["annotator"]).get("/studies/s1/gold/").status_code == 403
    expert_page = page_client(world["expert"]).get("/studies/s1/gold/")
    assert expert_page.status_code == 200 and b"Annotators' practice" not in expert_page.content


def test_the_workspace_shows_practice_feedback_once_submitted(world):
    practice_world(world)
    annotator = world["annotator"]
    client = page_client(annotator)
    first = Annotation.objects.get(pk=client_for(annotator).post("/api/studies/s1/my-queue/next/").json()["id"])
    before = client.get(f"/annotate/{first.pk}/").content.decode()
    assert 'data-practice="1"' in before and "Practice item." in before and "practice-redline" not in before
    complete(
        first, annotator, overview={"verdict": "reject", "text": "A card <b>with</b> a counter.", "modes": ["factual"]}
    )
    after = client.get(f"/annotate/{first.pk}/").content.decode()
    assert 'id="practice-redline"' in after and "<del>" in after and "&lt;b&gt;" in after
    assert "Modes you missed" not in after or "factual" not in after.split("Modes you missed")[1][:80]
    # A hidden gold check says nothing of the kind.
    Study.objects.filter(pk=world["study"].pk).update(requires_qualification=False)
    work = Annotation.objects.filter(annotator=annotator, purpose="work").first()
    check = Annotation.objects.create(
        caption=world["captions"]["f"], annotator=annotator, taxonomy=world["study"].taxonomy, purpose="gold_check"
    )
    for row in (work, check):
        text = page_client(annotator).get(f"/annotate/{row.pk}/").content.decode()
        assert "data-practice" not in text and "practice" not in text.lower().split("</header>")[0]


# --------------------------------------------------------------------------- bundles


def test_a_bundle_keeps_gold_items_practice_attempts_and_gold_checks(world):
    from annotation.interchange import bundles
    from annotation.services.bundles import bundle_export, bundle_import

    practice_world(world, required=True, min_items=2)
    client = client_for(world["annotator"])
    for _ in range(2):
        complete(
            Annotation.objects.get(pk=client.post("/api/studies/s1/my-queue/next/").json()["id"]),
            world["annotator"],
            overview=WRONG,
        )
    client_for(world["admin"]).post("/api/studies/s1/practice/qualifications/annotator/retry/")
    client.post("/api/studies/s1/my-queue/next/")  # attempt 2 begins
    original = bundle_export(study=Study.objects.get(pk=world["study"].pk))
    assert {a.get("purpose", "work") for a in original["annotations"]} == {"work", "gold", "practice"}
    assert sorted(a.get("attempt", 1) for a in original["annotations"] if a.get("purpose") == "practice") == [
        1,
        1,
        2,
        2,
    ]
    assert [g["clip"] for g in original["study"]["gold_items"]] == ["a", "b"]
    report = bundle_import(data=bundles.dumps(original), slug="s1-copy", grant_existing=True)
    copy = report.study
    assert copy.requires_qualification and copy.practice_min_items == 2
    assert GoldItem.objects.filter(study=copy, in_practice_set=True).count() == 2
    again = bundle_export(study=copy)
    assert again["annotations"] == original["annotations"]
    assert again["study"]["gold_items"] == original["study"]["gold_items"]
    # A bundle naming a gold item without its gold annotation is refused.
    broken = bundles.loads(bundles.dumps(original))
    broken["study"]["gold_items"].append(
        {
            "clip": "f",
            "model": broken["study"]["gold_items"][0]["model"],
            "in_practice_set": False,
            "source": "workspace",
        }
    )
    assert any("no gold annotation" in e for e in bundles.check(broken))

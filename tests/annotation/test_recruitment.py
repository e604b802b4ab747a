"""Recruitment links: made by a study admin (API, validated field by field), opened by crowd
participants who become annotators without a password (only a keyed hash of their id kept),
resumed on a second visit, refused politely when the link is closed, expired or full or the id
missing or malformed (nothing created), refused by the study's state unless it runs; the quota
of items per participant; completion recorded once and shown again. The race of one id in two
requests is PostgreSQL's."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.errors import FieldErrors, StudyStateRefused
from annotation.models import Annotation, AuditEvent, Membership, Participant, RecruitmentLink, Withdrawal
from annotation.rules import recruitment
from annotation.rules.assignment import Item
from annotation.services import recruitment as service
from annotation.services.annotation_common import NotAllowed
from annotation.services.lifecycle import study_close
from annotation.services.withdrawal import participation_withdraw
from annotation.services.workflow import annotation_open, annotation_snapshot
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip, save
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

PID = "5f2a9c8e1b3d4a6f7e8c9d01"  # Prolific's ids are 24 hexadecimal digits
PARAMS = {"PROLIFIC_PID": PID, "STUDY_ID": "60a1b2c3d4e5f6a7b8c9d0e1", "SESSION_ID": "sess1234abcd"}


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def running(study, personas):
    """Study s1 running: three clips with two models' captions each (six items, nobody's yet)."""
    for clip in ("a", "b", "c"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, model) for clip in ("a", "b", "c") for model in ("M-one", "M-two")])
    assert study.state == "running"  # the default studies are made running
    return study


def make_link(study, admin, **fields):
    return service.recruitment_link_create(study=study, actor=admin, **{"cap": 2, "quota": 2, **fields})


# --------------------------------------------------------------------------- pure rules


def test_pick_items_gives_one_caption_per_clip_under_one_model_per_clip_and_stays_within_the_quota():
    items = [Item(f"{clip}{model}", clip, model) for clip in "abcd" for model in "xy"]
    picked = recruitment.pick_items(items=items, quota=3, one_per_clip=True, seed="s")
    assert len(picked) == 3 and len({item.clip for item in picked}) == 3
    assert recruitment.pick_items(items=items, quota=10, one_per_clip=True, seed="s").__len__() == 4
    assert len(recruitment.pick_items(items=items, quota=10, one_per_clip=False, seed="s")) == 8
    assert recruitment.pick_items(items=items, quota=3, one_per_clip=True, seed="s") == picked  # seeded


def test_pick_items_takes_the_model_with_most_captions_left():
    items = [Item("a1", "a", "x"), Item("b1", "b", "x"), Item("b2", "b", "y")]
    assert {item.model for item in recruitment.pick_items(items=items, quota=2, one_per_clip=True, seed=1)} == {"x"}


def test_a_join_picks_from_the_clips_it_walks_what_it_would_pick_from_every_free_caption(study, personas):
    """A join reads the free captions of the clips it walks only (services.recruitment._pick);
    it picks what pick_items picks from all of them, for either design, any quota and seed, and
    with captions already taken."""
    from annotation.models import Caption
    from annotation.services.workflow import annotations_assign

    clips = [f"c{n:02d}" for n in range(12)]
    for clip in clips:
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, model) for clip in clips for model in ("M-one", "M-two", "M-three")
                         if (clip, model) != ("c03", "M-two")])
    annotations_assign(study=study, annotators=[personas["annotator"]],
                       captions=Caption.objects.filter(clip__name__in=["c01", "c05"], model__name="M-one"))
    free = [Item(c.pk, c.clip_id, c.model_id) for c in Caption.objects.filter(clip__study=study, annotations=None)
            .order_by("clip_id", "model_id", "pk")]
    assert len(free) == 33
    for one_per_clip in (True, False):
        for quota in (1, 3, 12, 20, 40):
            for seed in ("s1:a", "s1:b", "s1:c"):
                expected = recruitment.pick_items(items=free, quota=quota, one_per_clip=one_per_clip, seed=seed)
                assert service._pick(study, quota, seed, one_per_clip=one_per_clip) == expected, (quota, seed)


def test_a_clip_taken_between_the_join_s_reads_makes_it_pick_from_every_free_caption(
        study, personas, monkeypatch):
    """An admin's assignment may take a clip's last free caption after the join read the clips
    with free captions and before it reads theirs: the join then picks from what is free still,
    as pick_items does, and gives a full quota of captions nobody has."""
    from annotation.models import Caption
    from annotation.services.workflow import annotations_assign

    clips = [f"c{n:02d}" for n in range(6)]
    for clip in clips:
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip) for clip in clips])
    read = service._free_captions
    taken = []

    def assigned_meanwhile(study_id, clips=None):
        if clips is not None and not taken:  # the admin assigns the first walked clip's caption now
            taken.append(Caption.objects.get(clip_id=clips[0]))
            annotations_assign(study=study, annotators=[personas["annotator"]], captions=[taken[0]])
        return read(study_id, clips)

    monkeypatch.setattr(service, "_free_captions", assigned_meanwhile)
    picked = service._pick(study, 3, "s1:x", one_per_clip=True)
    free = [Item(c.pk, c.clip_id, c.model_id) for c in Caption.objects.filter(clip__study=study, annotations=None)
            .order_by("clip_id", "model_id", "pk")]
    assert taken and taken[0].pk not in {item.caption for item in picked}
    assert picked == recruitment.pick_items(items=free, quota=3, one_per_clip=True, seed="s1:x") and len(picked) == 3


def test_pick_from_needs_the_captions_of_the_clips_it_walks_only():
    items = [Item(f"{clip}{model}", clip, model) for clip in "abcdefgh" for model in "xyz"]
    for quota, one_per_clip in ((3, True), (3, False), (8, True), (20, False)):
        everything = recruitment.pick_items(items=items, quota=quota, one_per_clip=one_per_clip, seed="s")
        order, rng = recruitment.clip_order("abcdefgh", "s")
        walked = recruitment.clips_walked(order, quota=quota, one_per_clip=one_per_clip)
        left = {clip: [item for item in items if item.clip == clip] for clip in walked}
        per_model = {"x": 8, "y": 8, "z": 8}
        assert recruitment.pick_from(order=order, left=left, per_model=per_model, quota=quota,
                                     one_per_clip=one_per_clip, rng=rng) == everything
        assert len(walked) == (8 if quota > 8 and not one_per_clip else min(quota, 8))
        assert per_model == {"x": 8, "y": 8, "z": 8} and all(len(v) == 3 for v in left.values())  # left as it was


@pytest.mark.parametrize(("value", "message"), [
    (None, "needs your participant id"),
    ("", "needs your participant id"),
    ("{{%PROLIFIC_PID%}}", "placeholder"),
    ("a b", "not an id"),
    ("x" * 65, "not an id"),
    (["one", "two"], "more than once"),
    ("<script>", "not an id"),
])
def test_a_missing_or_malformed_id_is_refused_saying_why(value, message):
    assert message in recruitment.id_problem(value, name="PROLIFIC_PID", required=True)


def test_the_url_for_the_platform_carries_its_placeholders():
    url = recruitment.recruitment_url("https://r.example/join/T/", platform="prolific", participant="PROLIFIC_PID",
                                      study="STUDY_ID", session="SESSION_ID")
    assert url == ("https://r.example/join/T/?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                   "&SESSION_ID={{%SESSION_ID%}}")
    assert recruitment.recruitment_url("https://r.example/join/T/", platform="other", participant="pid",
                                       study="", session="") == "https://r.example/join/T/?pid={pid}"


NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(("completed", "time_out", "withdrawn", "state"), [
    (None, None, None, ("working", None)),  # no time allowed: never timed out
    (None, NOW + HOUR, None, ("working", None)),  # time left
    (None, NOW, None, ("timed out", NOW)),  # their time ends this instant
    (None, NOW - HOUR, None, ("timed out", NOW - HOUR)),
    (NOW - 2 * HOUR, NOW - HOUR, None, ("completed", NOW - 2 * HOUR)),  # completed in time
    (NOW, NOW - HOUR, None, ("completed", NOW)),  # whatever the clock: completed is completed
    (None, NOW - HOUR, NOW - 2 * HOUR, ("withdrawn", NOW - 2 * HOUR)),  # withdrew before the end
    (NOW - HOUR, None, NOW, ("withdrawn", NOW)),  # withdrew after completing: their work is out
])
def test_a_participants_state_says_who_timed_out_and_when(completed, time_out, withdrawn, state):
    assert recruitment.participant_state(completed_at=completed, time_out_at=time_out, withdrawn_at=withdrawn,
                                         now=NOW) == state


# --------------------------------------------------------------------------- the API


def test_a_study_admin_makes_a_prolific_link_whose_url_is_shown_once(running, personas):
    answer = api(personas["admin"]).post("/api/studies/s1/recruitment-links/", {
        "cap": 30, "quota": 2, "days": 7, "label": "pilot",
        "completion_url": "https://app.prolific.com/submissions/complete?cc=C0DE1234", "completion_code": "C0DE1234",
    }, format="json")
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert (body["platform"], body["participant_param"], body["study_param"], body["session_param"]) == (
        "prolific", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
    assert (body["role"], body["cap"], body["quota"], body["state"], body["joined"]) == ("annotator", 30, 2, "open", 0)
    token = re.fullmatch(r"http://testserver/join/([A-Za-z0-9_-]{43})/\?PROLIFIC_PID=\{\{%PROLIFIC_PID%\}\}"
                         r"&STUDY_ID=\{\{%STUDY_ID%\}\}&SESSION_ID=\{\{%SESSION_ID%\}\}", body["url"])[1]
    link = RecruitmentLink.objects.get()
    assert token not in str(RecruitmentLink.objects.values().get()) and link.token_hash != token
    listed = api(personas["admin"]).get("/api/studies/s1/recruitment-links/").json()
    assert "url" not in listed[0] and listed[0]["id"] == body["id"]
    generic = api(personas["admin"]).post("/api/studies/s1/recruitment-links/", {
        "platform": "other", "cap": 5, "quota": 1}, format="json").json()
    assert (generic["participant_param"], generic["study_param"], generic["session_param"]) == ("pid", "", "")
    assert generic["url"].endswith("/?pid={pid}") and re.fullmatch(r"[0-9A-F]{8}", generic["completion_code"])


@pytest.mark.parametrize(("body", "field"), [
    ({"cap": 0, "quota": 2}, "cap"),
    ({"cap": 2, "quota": 0}, "quota"),
    ({"cap": 2, "quota": 2, "days": 0}, "days"),
    ({"cap": 2, "quota": 2, "participant_param": "bad name"}, "participant_param"),
    ({"cap": 2, "quota": 2, "participant_param": "STUDY_ID"}, "participant_param"),
    ({"cap": 2, "quota": 2, "completion_url": "javascript:alert(1)"}, "completion_url"),
    ({"cap": 2, "quota": 2, "completion_code": "no spaces here"}, "completion_code"),
    ({"cap": 2, "quota": 2, "platform": "mturk"}, "platform"),
    ({"quota": 2}, "cap"),
])
def test_bad_link_settings_are_refused_naming_the_field_and_nothing_is_stored(running, personas, body, field):
    answer = api(personas["admin"]).post("/api/studies/s1/recruitment-links/", body, format="json")
    assert answer.status_code == 400 and field in answer.json(), answer.json()
    assert not RecruitmentLink.objects.exists()


def test_only_the_study_admin_makes_lists_and_closes_links(running, personas):
    link, _ = make_link(running, personas["admin"])
    for persona in ("annotator", "reviewer", "researcher", "outsider"):
        client = api(personas[persona])
        assert client.get("/api/studies/s1/recruitment-links/").status_code in (403, 404)
        assert client.post("/api/studies/s1/recruitment-links/", {"cap": 1, "quota": 1}, format="json").status_code in (
            403, 404)
        assert client.post(f"/api/studies/s1/recruitment-links/{link.pk}/close/").status_code in (403, 404)
    closed = api(personas["admin"]).post(f"/api/studies/s1/recruitment-links/{link.pk}/close/")
    assert closed.status_code == 200 and closed.json()["state"] == "closed"
    again = api(personas["admin"]).post(f"/api/studies/s1/recruitment-links/{link.pk}/close/")
    assert again.status_code == 409


def test_a_link_of_one_study_is_not_found_under_another(running, personas, other_study):
    link, _ = make_link(running, personas["admin"])
    answer = api(personas["outsider"]).post(f"/api/studies/s2/recruitment-links/{link.pk}/close/")
    assert answer.status_code == 404


# --------------------------------------------------------------------------- joining


def test_opening_the_link_makes_a_passwordless_annotator_with_the_quota_and_only_a_hash_of_the_id(running, personas):
    link, token = make_link(running, personas["admin"])
    joined = service.participant_join(link=link, params=PARAMS)
    participant = joined.participant
    assert not joined.resumed
    user = participant.user
    assert not user.has_usable_password()
    assert list(Membership.objects.filter(study=running, user=user).values_list("role", flat=True)) == ["annotator"]
    items = Annotation.objects.filter(annotator=user)
    assert items.count() == 2 == participant.assigned
    assert len({item.caption.clip_id for item in items}) == 2  # one model per clip
    assert participant.pseudonym.startswith("P-") and PID not in user.username
    assert participant.pid_hash == service.participant_hash(running, PID) != PID
    stored = [str(row) for model in (Participant, AuditEvent) for row in model.objects.values_list()]
    assert not any(PID in row for row in stored)
    event = AuditEvent.objects.get(action="participant_join")
    assert event.after == {"participant": participant.pseudonym, "user": user.username, "link": link.pk, "items": 2}


def test_the_same_id_resumes_and_another_study_knows_it_under_another_pseudonym(running, personas, other_study):
    link, _ = make_link(running, personas["admin"])
    first = service.participant_join(link=link, params=PARAMS).participant
    again = service.participant_join(link=link, params={"PROLIFIC_PID": PID})
    assert again.resumed and again.participant.pk == first.pk
    assert Participant.objects.count() == 1 and Annotation.objects.filter(annotator=first.user).count() == 2
    other = make_link(running, personas["admin"], cap=5)[0]  # a second link of the study: the same person
    assert service.participant_join(link=other, params=PARAMS).participant.pk == first.pk
    assert service.participant_hash(other_study, PID) != first.pid_hash


def test_a_full_closed_or_expired_link_refuses_newcomers_but_lets_participants_come_back(running, personas):
    link, _ = make_link(running, personas["admin"], cap=1, quota=1)
    first = service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).participant
    users = Participant.objects.count(), type(first.user).objects.count()
    with pytest.raises(service.RecruitmentRefused, match="all the participants it needs") as refusal:
        service.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})
    assert refusal.value.kind == "full"
    RecruitmentLink.objects.filter(pk=link.pk).update(cap=5, expires_at=timezone.now() - timedelta(seconds=1))
    link.refresh_from_db()
    with pytest.raises(service.RecruitmentRefused, match="expired") as refusal:
        service.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})
    service.recruitment_link_close(link=link, actor=personas["admin"])
    with pytest.raises(service.RecruitmentRefused, match="no longer taking participants"):
        service.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})
    assert (Participant.objects.count(), type(first.user).objects.count()) == users
    assert service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).resumed


def test_a_missing_or_malformed_id_creates_nothing(running, personas, django_user_model):
    link, _ = make_link(running, personas["admin"])
    users = django_user_model.objects.count()
    for params in ({}, {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"}, {"PROLIFIC_PID": "x y"},
                   {**PARAMS, "SESSION_ID": "bad session"}):
        with pytest.raises(service.RecruitmentRefused) as refusal:
            service.participant_join(link=link, params=params)
        assert refusal.value.kind == "bad_id"
    assert django_user_model.objects.count() == users and not Participant.objects.exists()


def test_no_work_left_refuses_a_newcomer_and_creates_nothing(running, personas, django_user_model):
    link, _ = make_link(running, personas["admin"], cap=10, quota=3)
    service.participant_join(link=link, params={"PROLIFIC_PID": "a1"})
    service.participant_join(link=link, params={"PROLIFIC_PID": "a2"})  # six items given
    users = django_user_model.objects.count()
    with pytest.raises(service.RecruitmentRefused, match="no work left"):
        service.participant_join(link=link, params={"PROLIFIC_PID": "a3"})
    assert django_user_model.objects.count() == users and Participant.objects.count() == 2


def test_no_one_joins_a_study_in_setup_and_closing_the_study_closes_its_links(study, personas):
    fake_clip(study, "a")
    captions_add(study, [caption_record("a", "M-one")])
    with in_setup(study):
        study.refresh_from_db()
        link, _ = make_link(study, personas["admin"])  # links are made in setup, for the platform's page
        with pytest.raises(StudyStateRefused, match="being set up"):
            service.participant_join(link=link, params=PARAMS)
    assert not Participant.objects.exists()
    study.refresh_from_db()
    study_close(study=study, actor=personas["admin"], confirm=True)
    link.refresh_from_db()
    assert link.state == "closed"
    with pytest.raises(StudyStateRefused, match="is closed"):
        service.participant_join(link=link, params=PARAMS)
    with pytest.raises(StudyStateRefused):
        make_link(study, personas["admin"])


def test_completion_is_recorded_once_when_every_item_is_done(running, personas):
    link, _ = make_link(running, personas["admin"])
    participant = service.participant_join(link=link, params=PARAMS).participant
    user = participant.user
    first, second = Annotation.objects.filter(annotator=user).order_by("queue_position")
    assert not service.participant_complete(participant=participant)
    complete(first, user)
    assert not service.participant_complete(participant=participant)
    complete(second, user)
    assert service.participant_complete(participant=participant)
    assert service.participant_complete(participant=participant)
    assert AuditEvent.objects.filter(action="participant_complete").count() == 1
    assert Participant.objects.get().completed_at is not None
    [row] = service.participants_list(study=running)
    assert (row.pseudonym, row.done, row.assigned) == (participant.pseudonym, 2, 2) and row.completed_at


# --------------------------------------------------------------------------- the pages


def join_url(token: str, **params) -> str:
    query = "&".join(f"{name}={value}" for name, value in params.items())
    return f"/join/{token}/?{query}"


def test_the_landing_page_creates_nothing_and_its_start_signs_the_participant_in(running, personas, settings):
    link, token = make_link(running, personas["admin"], completion_code="C0DE1234",
                            completion_url="https://app.prolific.com/submissions/complete?cc=C0DE1234")
    browser = Client()
    page = browser.get(join_url(token, **PARAMS))
    assert page.status_code == 200 and b"recruitment-start" in page.content
    assert b"platform id is kept encrypted" in page.content and b"not stored" not in page.content
    assert not Participant.objects.exists()
    started = browser.post(f"/join/{token}/", PARAMS)
    assert started.status_code == 302 and started["Location"] == "/studies/s1/queue/"
    participant = Participant.objects.get()
    assert browser.get("/studies/s1/queue/").status_code == 200
    assert browser.get("/studies/s1/done/").status_code == 302  # not done yet: back to the queue
    for item in Annotation.objects.filter(annotator=participant.user):
        complete(item, participant.user)
    assert browser.get("/studies/s1/queue/")["Location"] == "/studies/s1/done/"
    done = browser.get("/studies/s1/done/")
    assert done.status_code == 200
    text = done.content.decode()
    assert 'id="completion-code">C0DE1234<' in text
    assert 'data-return-url="https://app.prolific.com/submissions/complete?cc=C0DE1234"' in text
    assert "frontend/participant-done.js" in text
    answer = browser.post("/api/studies/s1/my-queue/next/")
    assert answer.status_code == 404 and answer.json()["url"] == "/studies/s1/done/"
    # Coming back through the link, in another browser: the code again, no new work.
    again = Client()
    assert b"Welcome back" in again.get(join_url(token, **PARAMS)).content
    assert again.post(f"/join/{token}/", PARAMS)["Location"] == "/studies/s1/done/"
    assert Annotation.objects.filter(annotator=participant.user).count() == 2


@pytest.mark.parametrize(("params", "status", "words"), [
    ({}, 400, "needs your participant id"),
    ({"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"}, 400, "placeholder"),
])
def test_the_landing_page_refuses_a_bad_id_with_a_message(running, personas, params, status, words):
    _, token = make_link(running, personas["admin"])
    for answer in (Client().get(f"/join/{token}/", params), Client().post(f"/join/{token}/", params)):
        assert answer.status_code == status and words in answer.content.decode()
    assert not Participant.objects.exists()


def test_an_unknown_link_is_a_404_page_and_a_closed_studys_link_a_closed_page(running, personas):
    _, token = make_link(running, personas["admin"])
    assert Client().get(join_url("x" * 43, PROLIFIC_PID=PID)).status_code == 404
    study_close(study=running, actor=personas["admin"], confirm=True)
    page = Client().get(join_url(token, PROLIFIC_PID=PID))
    assert page.status_code == 410 and "This study is closed" in page.content.decode()
    assert Client().post(f"/join/{token}/", PARAMS).status_code == 409


def test_a_full_link_says_so_on_its_page(running, personas):
    _, token = make_link(running, personas["admin"], cap=1, quota=1)
    assert Client().post(f"/join/{token}/", {"PROLIFIC_PID": "first1"}).status_code == 302
    page = Client().get(join_url(token, PROLIFIC_PID="second2"))
    assert page.status_code == 410 and "all the participants it needs" in page.content.decode()


def test_opening_links_is_rate_limited_per_address(running, personas, settings):
    settings.RECRUITMENT_OPENS_PER_ADDRESS = 3
    _, token = make_link(running, personas["admin"])
    browser = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        assert browser.get(join_url("y" * 43, PROLIFIC_PID=PID)).status_code == 404
    refused = browser.get(join_url(token, PROLIFIC_PID=PID))
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "too often" in refused.content.decode()
    assert Client(REMOTE_ADDR="203.0.113.10").get(join_url(token, PROLIFIC_PID=PID)).status_code == 200


def test_the_participants_are_listed_to_the_admin_by_pseudonym(running, personas):
    link, _ = make_link(running, personas["admin"])
    participant = service.participant_join(link=link, params=PARAMS).participant
    rows = api(personas["admin"]).get("/api/studies/s1/participants/").json()
    assert [(r["pseudonym"], r["done"], r["assigned"], r["link"]) for r in rows] == [
        (participant.pseudonym, 0, 2, link.pk)]
    assert PID not in str(rows)
    links = api(personas["admin"]).get("/api/studies/s1/recruitment-links/").json()
    assert (links[0]["joined"], links[0]["completed"]) == (1, 0)


# --------------------------------------------------------------------------- races


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_id_opened_twice_at_once_makes_one_participant(running, personas):
    link, _ = make_link(running, personas["admin"], cap=5)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def join():
        try:
            barrier.wait()
            results.append(service.participant_join(link=link, params=PARAMS))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=join) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(joined.resumed for joined in results) == [False, True]
    assert Participant.objects.count() == 1 and len({joined.participant.pk for joined in results}) == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_cap_holds_when_newcomers_arrive_at_once(running, personas):
    link, _ = make_link(running, personas["admin"], cap=2, quota=1)
    barrier = threading.Barrier(4)
    outcomes = []

    def join(n):
        try:
            barrier.wait()
            service.participant_join(link=link, params={"PROLIFIC_PID": f"racer{n}"})
            outcomes.append("joined")
        except service.RecruitmentRefused as refusal:
            outcomes.append(refusal.kind)
        finally:
            connection.close()

    threads = [threading.Thread(target=join, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["full", "full", "joined", "joined"]
    assert Participant.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_join_in_progress_does_not_hold_back_the_audit_rows_of_people_s_saves(running, personas):
    """A join holds the study's row for its whole transaction; every save writes an audit row
    whose foreign key share-locks that row's key. Here the join is held mid-way (another
    transaction has its link's row), and an audit row for the study must still go in at once."""
    from django.db import transaction

    link, _ = make_link(running, personas["admin"], cap=5)
    link_held, release = threading.Event(), threading.Event()
    outcomes = []

    def hold_the_link():
        try:
            with transaction.atomic():
                RecruitmentLink.objects.select_for_update().get(pk=link.pk)
                link_held.set()
                release.wait(30)
        finally:
            connection.close()

    def join():
        try:
            outcomes.append(service.participant_join(link=link, params=PARAMS))
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_link)
    holder.start()
    assert link_held.wait(10)
    joiner = threading.Thread(target=join)
    joiner.start()
    try:
        with connection.cursor() as cursor:  # wait until the join waits for the link, the study held
            for _ in range(100):
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND datname = current_database()")
                if cursor.fetchone()[0]:
                    break
                threading.Event().wait(0.05)
            else:
                pytest.fail("the join never waited for the held link")
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            AuditEvent.objects.create(study=running, actor=personas["annotator"], action="autosave",
                                      before={}, after={})
    finally:
        release.set()
        holder.join()
        joiner.join()
    assert len(outcomes) == 1 and not outcomes[0].resumed


def test_field_errors_name_every_bad_field_at_once(running, personas):
    with pytest.raises(FieldErrors) as refusal:
        make_link(running, personas["admin"], cap=0, quota=0, days=999)
    assert set(refusal.value.errors) == {"cap", "quota", "days"}


def test_a_participant_the_admin_deactivated_does_not_come_back(running, personas):
    from annotation.services.members import member_deactivate

    link, token = make_link(running, personas["admin"])
    participant = service.participant_join(link=link, params=PARAMS).participant
    member_deactivate(study=running, actor=personas["admin"], user=participant.user)
    with pytest.raises(service.RecruitmentRefused, match="no longer take part"):
        service.participant_join(link=link, params=PARAMS)
    browser = Client()
    page = browser.post(f"/join/{token}/", PARAMS)
    assert page.status_code == 410 and "no longer take part" in page.content.decode()
    assert "_auth_user_id" not in browser.session


def test_someone_signed_in_is_told_that_start_signs_them_out(running, personas):
    _, token = make_link(running, personas["admin"])
    browser = Client()
    browser.force_login(personas["admin"])
    page = browser.get(join_url(token, **PARAMS)).content.decode()
    assert "You are signed in here as admin" in page
    assert browser.post(f"/join/{token}/", PARAMS).status_code == 302
    assert int(browser.session["_auth_user_id"]) == Participant.objects.get().user_id


# --------------------------------------------------------------------------- time allowed


def _time_passes(participant, minutes: int) -> None:
    """Move the participant's join (and their time allowed's end) `minutes` into the past."""
    Participant.objects.filter(pk=participant.pk).update(
        joined_at=participant.joined_at - timedelta(minutes=minutes),
        time_out_at=participant.time_out_at - timedelta(minutes=minutes) if participant.time_out_at else None)


def _captions(participant) -> set[int]:
    return set(Annotation.objects.filter(annotator=participant.user).values_list("caption_id", flat=True))


@pytest.fixture
def timed(running, personas):
    """A link of 3 items each and 60 minutes allowed; `first` joined and submitted one item."""
    link, token = make_link(running, personas["admin"], cap=5, quota=3, time_allowed=60)
    first = service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).participant
    assert abs(first.time_out_at - first.joined_at - timedelta(minutes=60)) < timedelta(seconds=1)
    submitted = Annotation.objects.filter(annotator=first.user).order_by("queue_position").first()
    complete(submitted, first.user)
    service.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})  # the other three items
    return {"link": link, "token": token, "first": first, "submitted": submitted}


def test_a_timed_out_participants_unsubmitted_items_go_to_the_next_participant(timed):
    link, first = timed["link"], timed["first"]
    with pytest.raises(service.RecruitmentRefused, match="no work left"):
        service.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24})
    _time_passes(first, 61)
    third = service.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24}).participant
    # Their two items not submitted are free; the submitted one still holds its caption.
    assert _captions(third) == _captions(first) - {timed["submitted"].caption_id}
    assert len(_captions(third)) == 2
    assert Annotation.objects.get(pk=timed["submitted"].pk).state == "submitted"


def test_a_timed_out_participant_coming_back_is_refused_politely(timed):
    link, first, token = timed["link"], timed["first"], timed["token"]
    _time_passes(first, 61)
    with pytest.raises(service.RecruitmentRefused, match="Your time for this study ran out") as refused:
        service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24})
    assert refused.value.kind == "timed_out"
    page = Client().get(join_url(token, PROLIFIC_PID="a" * 24))
    assert page.status_code == 410
    text = page.content.decode()
    assert "Your time for this study ran out" in text and "The work you submitted still counts" in text
    assert b"recruitment-start" not in page.content
    answer = Client().post(f"/join/{token}/", {"PROLIFIC_PID": "a" * 24})
    assert answer.status_code == 410 and "ran out" in answer.content.decode()


def test_a_timed_out_participant_signed_in_gets_no_more_work(timed):
    first = timed["first"]
    _time_passes(first, 61)
    client = APIClient()
    client.force_authenticate(first.user)
    answer = client.post("/api/studies/s1/my-queue/next/")
    assert answer.status_code == 403 and "ran out" in answer.json()["detail"]


def test_a_timed_out_participants_open_workspace_saves_and_submits_no_more(timed):
    """The item they had open goes to the next participant: its autosave, its submit and a
    reload of its workspace are refused with the time-out sentence; what was saved stays."""
    first = timed["first"]
    item = Annotation.objects.filter(annotator=first.user, state="assigned").order_by("queue_position").first()
    item = annotation_open(annotation=item, actor=first.user)
    item = save(item, first.user, overview={"verdict": "reject", "text": "Saved in time.", "modes": ["factual"]})
    _time_passes(first, 61)
    client = api(first.user)
    answer = client.patch(f"/api/annotations/{item.pk}/draft/",
                          {"base_version": item.version, "changes": {"overview": {"text": "Too late."}}},
                          format="json")
    assert answer.status_code == 403 and "ran out" in answer.json()["detail"]
    answer = client.post(f"/api/annotations/{item.pk}/submit/", {"base_version": item.version}, format="json")
    assert answer.status_code == 403 and "ran out" in answer.json()["detail"]
    with pytest.raises(NotAllowed, match="ran out"):
        annotation_open(annotation=Annotation.objects.get(pk=item.pk), actor=first.user)
    kept = Annotation.objects.get(pk=item.pk)
    assert kept.state == "in_progress" and kept.version == item.version
    assert annotation_snapshot(kept)["annotator_pass"]["overview"]["text"] == "Saved in time."


def test_a_participant_within_their_time_is_unaffected(timed):
    link, first = timed["link"], timed["first"]
    _time_passes(first, 59)
    with pytest.raises(service.RecruitmentRefused, match="no work left"):
        service.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24})
    assert service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).resumed


def test_a_participant_who_completed_is_unaffected_by_their_time(timed):
    link, first = timed["link"], timed["first"]
    for item in Annotation.objects.filter(annotator=first.user).exclude(pk=timed["submitted"].pk):
        complete(item, first.user)
    _time_passes(first, 61)
    assert service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).resumed
    assert service.participant_complete(participant=Participant.objects.get(pk=first.pk))


def test_without_a_time_allowed_nobody_times_out(running, personas):
    link, _ = make_link(running, personas["admin"], cap=5, quota=3)
    first = service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).participant
    service.participant_join(link=link, params={"PROLIFIC_PID": "b" * 24})
    assert first.time_out_at is None
    _time_passes(first, 60 * 24 * 365)
    with pytest.raises(service.RecruitmentRefused, match="no work left"):
        service.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24})
    assert service.participant_join(link=link, params={"PROLIFIC_PID": "a" * 24}).resumed


def test_the_participants_list_tells_who_timed_out_and_when(timed, personas, running):
    first, link = timed["first"], timed["link"]
    _time_passes(first, 61)
    first.refresh_from_db()
    withdrawer = service.participant_join(link=link, params={"PROLIFIC_PID": "c" * 24}).participant
    participation_withdraw(study=running, user=withdrawer.user)
    withdrawn_at = Withdrawal.objects.get(user=withdrawer.user).at
    rows = {row.pseudonym: row for row in service.participants_list(study=running)}
    assert (rows[first.pseudonym].state, rows[first.pseudonym].state_at) == ("timed out", first.time_out_at)
    assert (rows[withdrawer.pseudonym].state, rows[withdrawer.pseudonym].state_at) == ("withdrawn", withdrawn_at)
    [second] = [row for name, row in rows.items() if name not in (first.pseudonym, withdrawer.pseudonym)]
    assert (second.state, second.state_at) == ("working", None) and second.time_out_at > timezone.now()
    answer = {row["pseudonym"]: row for row in api(personas["admin"]).get("/api/studies/s1/participants/").json()}
    mine = answer[first.pseudonym]
    assert mine["state"] == "timed out" and mine["completed_at"] is None
    assert datetime.fromisoformat(mine["state_at"].replace("Z", "+00:00")) == first.time_out_at
    assert answer[second.pseudonym]["state"] == "working" and answer[second.pseudonym]["state_at"] is None
    assert answer[withdrawer.pseudonym]["state"] == "withdrawn"


def test_a_participant_who_completed_after_their_time_is_listed_completed(timed, running):
    first = timed["first"]
    for item in Annotation.objects.filter(annotator=first.user).exclude(pk=timed["submitted"].pk):
        complete(item, first.user)
    assert service.participant_complete(participant=first)
    _time_passes(Participant.objects.get(pk=first.pk), 61)
    [row] = [row for row in service.participants_list(study=running) if row.pseudonym == first.pseudonym]
    assert (row.state, row.state_at) == ("completed", Participant.objects.get(pk=first.pk).completed_at)


@pytest.mark.parametrize("bad", [0, -5, 60 * 24 * 30 + 1, "an hour", True])
def test_the_api_refuses_a_bad_time_allowed_naming_it(running, personas, bad):
    answer = api(personas["admin"]).post("/api/studies/s1/recruitment-links/", {
        "cap": 2, "quota": 2, "time_allowed": bad}, format="json")
    assert answer.status_code == 400 and "time_allowed" in answer.content.decode()
    assert not RecruitmentLink.objects.exists()


def test_the_api_makes_and_lists_a_link_with_its_time_allowed(running, personas):
    client = api(personas["admin"])
    made = client.post("/api/studies/s1/recruitment-links/", {"cap": 2, "quota": 2, "time_allowed": 45},
                       format="json")
    assert made.status_code == 201 and made.json()["time_allowed"] == 45
    [row] = client.get("/api/studies/s1/recruitment-links/").json()
    assert row["time_allowed"] == 45
    plain = client.post("/api/studies/s1/recruitment-links/", {"cap": 2, "quota": 2}, format="json")
    assert plain.json()["time_allowed"] is None

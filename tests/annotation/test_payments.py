"""Paying crowd participants: their platform ids sealed at rest and opened only for the study
admins' payment report; the report's times against a made-up audit trail (a clock the test
moves); its JSON and CSV agreeing; the bonus arithmetic and the bulk-bonus file; refusals
naming the field; who may read it; and the ids kept out of the release, the bundle, the
profile, the other pages and the logs."""

from __future__ import annotations

import csv
import io
import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from unittest import mock

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent, GoldItem, Participant
from annotation.rules import payments, sealed_ids
from annotation.services import recruitment
from annotation.services.annotating import annotation_open, annotation_save
from annotation.services.payments import COLUMNS, payment_report
from annotation.services.studies import membership_grant
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

PID = "5f2a9c8e1b3d4a6f7e8c9d01"
OTHER_PID = "6a0b1c2d3e4f5a6b7c8d9e0f"
REJECT = {"verdict": "reject", "text": "A test card with a counter.", "modes": ["factual"]}
ACCEPT = {"verdict": "accept"}


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


class Clock:
    """timezone.now() as the test sets it: a made-up timeline for the audit trail."""

    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = START + timedelta(seconds=seconds)


START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock():
    clock = Clock(START)
    with mock.patch("django.utils.timezone.now", clock):
        yield clock


@pytest.fixture
def running(study, personas):
    """Study s1 running: three clips with two models' captions each."""
    for clip in ("a", "b", "c"):
        fake_clip(study, clip)
    captions_add(study, [caption_record(clip, model) for clip in ("a", "b", "c") for model in ("M-one", "M-two")])
    return study


@pytest.fixture
def link(running, personas):
    return recruitment.recruitment_link_create(study=running, actor=personas["admin"], cap=5, quota=2)[0]


def join(link, pid: str = PID) -> Participant:
    return recruitment.participant_join(link=link, params={"PROLIFIC_PID": pid}).participant


def items_of(participant: Participant) -> list[Annotation]:
    return list(Annotation.objects.filter(annotator=participant.user).order_by("pk"))


# --------------------------------------------------------------------------- the times


# Seconds from START, and the active seconds each save sends. Item 1: opened at 100, a save at
# 160 sends 50 (credited 50), a save at 220 sends 120 though only 60 s passed (credited 60 + the
# 5 s slack = 65). Item 2: opened at 300, a save at 500 sends 200 (credited 200). Completed at 510.
TIMELINE = [
    (0, [(100, None), (160, 50.0), (220, 120.0)]),
    (1, [(300, None), (500, 200.0)]),
]


@pytest.fixture
def worked(link, clock):
    """One participant who joined at START and did both items on the timeline, and one who
    joined later and did nothing."""
    participant = join(link)
    items = items_of(participant)
    sent: dict[int, list[float]] = {}
    for index, steps in TIMELINE:
        annotation = items[index]
        for seconds, active in steps:
            clock.at(seconds)
            if active is None:
                annotation = annotation_open(annotation=annotation, actor=participant.user)
                continue
            text = f"A test card with a counter, seen at {seconds} s."
            annotation = annotation_save(annotation_id=annotation.pk, actor=participant.user,
                                         base_version=annotation.version,
                                         changes={"active_seconds": active, "overview": {**REJECT, "text": text}})
            sent.setdefault(annotation.pk, []).append(active)
        clock.at(steps[-1][0] + 10)
        complete(annotation, participant.user)  # the rest of the pass, no more active time
    assert recruitment.participant_complete(participant=Participant.objects.get(pk=participant.pk))
    clock.at(600)
    idle = join(link, OTHER_PID)
    return {"participant": participant, "idle": idle, "sent": sent, "clock": clock}


def credits_from_the_trail(annotation_id: int, sent: list[float]) -> float:
    """The active time the audit trail allows: each save credits what it sent (`sent`, in order;
    the saves after them sent none), but at most the time since the item's previous open or save
    in the trail plus 5 s, and 600 s a save."""
    events = list(AuditEvent.objects.filter(annotation_id=annotation_id, action__in=("open", "save"))
                  .order_by("at", "pk").values_list("action", "at"))
    total, previous, sends = 0.0, None, iter(sent)
    for action, at in events:
        if action == "save" and previous is not None:
            total += min(next(sends, 0.0), (at - previous).total_seconds() + 5, 600)
        previous = at
    return total


def test_the_reports_times_agree_with_the_audit_trail(worked, study):
    participant, idle = worked["participant"], worked["idle"]
    row, other = payment_report(study=study).rows
    assert (row.pseudonym, other.pseudonym) == (participant.pseudonym, idle.pseudonym)
    assert (row.participant_id, other.participant_id) == (PID, OTHER_PID)
    from_trail = sum(credits_from_the_trail(pk, sent) for pk, sent in worked["sent"].items())
    assert from_trail == 50 + 65 + 200
    assert row.active_seconds == from_trail
    joined = AuditEvent.objects.get(action="participant_join", after__participant=participant.pseudonym).at
    completed = AuditEvent.objects.get(action="participant_complete", after__participant=participant.pseudonym).at
    assert (row.joined_at, row.completed_at) == (joined, completed) == (START, START + timedelta(seconds=510))
    assert row.completion_seconds == (completed - joined).total_seconds() == 510
    assert (row.items_done, row.items_assigned) == (2, 2)
    assert (other.items_done, other.active_seconds, other.completed_at, other.completion_seconds) == (0, 0, None, None)
    assert (row.gold_checks, row.gold_accuracy) == (None, None)  # the study has no gold items


def test_the_csv_and_the_json_agree(worked, personas):
    answer = api(personas["admin"]).get("/api/studies/s1/payments/")
    assert answer.status_code == 200
    body = answer.json()
    assert body["has_gold"] is False and [tuple(c) for c in body["columns"]] == list(COLUMNS)
    download = api(personas["admin"]).get("/api/studies/s1/payments.csv")
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    assert 'filename="s1-payments.csv"' in download["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(download.content.decode())))
    assert len(lines) == len(body["participants"]) == 2
    for line, row in zip(lines, body["participants"], strict=True):
        assert list(line) == [key for key, _ in COLUMNS]
        for key, value in row.items():
            if value is None:
                assert line[key] == ("unknown" if key == "participant_id" else "")
            elif key.endswith("_at"):
                assert datetime.fromisoformat(line[key]) == datetime.fromisoformat(value.replace("Z", "+00:00"))
            elif isinstance(value, (int, float)):
                assert float(line[key]) == value
            else:
                assert line[key] == value
    assert lines[0]["active_seconds"] == "315.0" and lines[0]["completion_seconds"] == "510.0"


def test_the_report_its_csv_and_its_page_tell_who_timed_out_and_when(running, personas, study):
    link = recruitment.recruitment_link_create(study=running, actor=personas["admin"], cap=5, quota=1,
                                               time_allowed=30)[0]
    late, working = join(link), join(link, OTHER_PID)
    ended = timezone.now() - timedelta(minutes=5)
    Participant.objects.filter(pk=late.pk).update(time_out_at=ended)
    rows = {row.pseudonym: row for row in payment_report(study=study).rows}
    assert (rows[late.pseudonym].state, rows[late.pseudonym].state_at) == ("timed out", ended)
    assert (rows[working.pseudonym].state, rows[working.pseudonym].state_at) == ("working", None)
    body = api(personas["admin"]).get("/api/studies/s1/payments/").json()
    answer = {row["pseudonym"]: row for row in body["participants"]}
    assert answer[late.pseudonym]["state"] == "timed out" and answer[working.pseudonym]["state"] == "working"
    download = api(personas["admin"]).get("/api/studies/s1/payments.csv").content.decode()
    lines = {line["pseudonym"]: line for line in csv.DictReader(io.StringIO(download))}
    assert lines[late.pseudonym]["state"] == "timed out"
    assert datetime.fromisoformat(lines[late.pseudonym]["state_at"]) == ended
    assert (lines[working.pseudonym]["state"], lines[working.pseudonym]["state_at"]) == ("working", "")
    page = signed_in(personas["admin"]).get("/studies/s1/payments/").content.decode()
    late_row = page[page.index(f'data-pseudonym="{late.pseudonym}"'):]
    late_row = late_row[:late_row.index("</tr>")]
    assert 'data-state="timed out"' in late_row and timezone.localtime(ended).strftime("%Y-%m-%d %H:%M") in late_row
    working_row = page[page.index(f'data-pseudonym="{working.pseudonym}"'):]
    assert 'data-state="working"' in working_row[:working_row.index("</tr>")]


# --------------------------------------------------------------------------- the bonus


@pytest.mark.parametrize(("rate", "seconds", "amount"), [
    ("9.50", 3600, "9.50"),  # an hour at the rate
    ("12", 1515, "5.05"),  # 12 × 1515 / 3600 = 5.05 exactly
    ("9", 50, "0.13"),  # 0.125: half up (half to even would give 0.12)
    ("7.30", 5400, "10.95"),  # an hour and a half
    ("20", 1234.5, "6.86"),  # 6.8583...
    ("10", 1, "0.00"),  # 0.0027...: nothing due
    ("10", 0, "0.00"),
    ("1000", 600.1, "166.69"),  # 166.6944...
])
def test_the_bonus_is_the_rate_times_the_active_hours_to_the_cent_half_up(rate, seconds, amount):
    assert payments.bonus_amount(payments.parse_rate(rate), seconds) == Decimal(amount)


@pytest.mark.parametrize(("given", "rate"), [("9.5", "9.50"), (" 12 ", "12.00"), ("0.01", "0.01"), ("1000", "1000.00")])
def test_a_rate_is_read_to_the_cent(given, rate):
    assert str(payments.parse_rate(given)) == rate


@pytest.mark.parametrize(("given", "message"), [
    ("", "Enter the rate"),
    (None, "Enter the rate"),
    ("abc", "is a number"),
    ("9,50", "is a number"),
    ("NaN", "is a number"),
    ("Infinity", "is a number"),
    ("0", "above 0"),
    ("-3", "above 0"),
    ("0.00", "above 0"),
    ("1000.01", "at most 1000"),
    ("9.505", "two decimals"),
])
def test_a_bad_rate_is_refused_saying_why(given, message):
    with pytest.raises(payments.RateProblem, match=message):
        payments.parse_rate(given)


def test_the_bonus_file_is_prolifics_bulk_layout_and_says_who_was_skipped(worked, personas, study):
    Participant.objects.filter(pk=worked["idle"].pk).update(pid_sealed="")  # joined before ids were kept
    answer = api(personas["admin"]).get("/api/studies/s1/payments/bonus.csv", {"rate": "9"})
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    # 315 s at 9 an hour = 0.7875 -> 0.79; no header line.
    assert answer.content.decode() == f"{PID},0.79\n"
    assert answer["Redline-Skipped"] == "1"
    preview = api(personas["admin"]).get("/api/studies/s1/payments/bonus/", {"rate": "9"}).json()
    assert preview["file"] == answer.content.decode() and preview["total"] == "0.79" and preview["rate"] == "9.00"
    assert preview["skipped"] == 1 and preview["without_id"] == [worked["idle"].pseudonym]
    assert preview["lines"] == [{"pseudonym": worked["participant"].pseudonym, "participant_id": PID,
                                 "active_seconds": 315.0, "amount": "0.79"}]


def test_participants_with_nothing_due_are_left_out_and_counted(worked, personas):
    preview = api(personas["admin"]).get("/api/studies/s1/payments/bonus/", {"rate": "0.01"}).json()
    # 315 s at 0.01 an hour is 0.0009: nothing due, as for the idle participant.
    assert preview["lines"] == [] and preview["file"] == "" and preview["skipped"] == 2
    assert set(preview["nothing_due"]) == {worked["participant"].pseudonym, worked["idle"].pseudonym}


@pytest.mark.parametrize("rate", ["-5", "0", "ten", "", None])
def test_a_bad_rate_gets_a_400_naming_the_field(worked, personas, rate):
    params = {} if rate is None else {"rate": rate}
    for path in ("/api/studies/s1/payments/bonus/", "/api/studies/s1/payments/bonus.csv"):
        answer = api(personas["admin"]).get(path, params)
        assert answer.status_code == 400, answer.content
        body = answer.json()
        assert "rate" in body and body["detail"].startswith("rate: ")


# --------------------------------------------------------------------------- gold accuracy


def test_gold_accuracy_is_the_quality_pages_where_the_study_has_gold(link, personas, make_user, study):
    participant = join(link)
    expert = make_user("expert")
    membership_grant(study=study, user=expert, role="expert")
    gold_of = {"g0": REJECT, "g1": REJECT, "g2": REJECT, "g3": ACCEPT, "g4": ACCEPT}
    theirs = {"g0": REJECT, "g1": REJECT, "g2": ACCEPT, "g3": ACCEPT, "g4": REJECT}
    for name in gold_of:
        fake_clip(study, name)
    captions_add(study, [caption_record(name) for name in gold_of])
    for name in gold_of:
        caption = study.clips.get(name=name).captions.get()
        gold = complete(Annotation.objects.create(caption=caption, annotator=expert, taxonomy=study.taxonomy,
                                                  purpose="gold"), expert, overview=gold_of[name])
        GoldItem.objects.create(study=study, caption=caption, gold=gold, made_by=expert)
        check = Annotation.objects.create(caption=caption, annotator=participant.user, taxonomy=study.taxonomy,
                                          purpose="gold_check")
        complete(check, participant.user, overview=theirs[name])
    row = payment_report(study=study).rows[0]
    quality = api(personas["admin"]).get("/api/studies/s1/annotator-quality/").json()["annotators"]
    mine = next(r for r in quality if r["person"] == participant.user.username)
    assert (row.gold_checks, row.gold_accuracy) == (5, pytest.approx(3 / 5)) == (5, mine["gold_overview_agreement"])
    assert api(personas["admin"]).get("/api/studies/s1/payments/").json()["has_gold"] is True


# --------------------------------------------------------------------------- the sealed ids


def test_the_id_is_sealed_in_the_database_and_opens_for_the_report(link, study):
    participant = join(link)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM annotation_participant")
        stored = repr(cursor.fetchall())
    assert PID not in stored and PID.upper() not in stored
    assert participant.pid_sealed.startswith("v1:") and participant.pid_hash in stored
    keys = recruitment.participant_id_keys(study)
    assert sealed_ids.unseal(keys, participant.pid_sealed, study=study.pk, digest=participant.pid_hash) == PID
    again = join(link, PID)  # coming back: looked up by the hash, as before
    assert again.pk == participant.pk and Participant.objects.count() == 1
    assert payment_report(study=study).rows[0].participant_id == PID


def test_two_seals_of_one_id_differ_and_neither_opens_on_another_row(link, study):
    first, second = join(link), join(link, OTHER_PID)
    keys = recruitment.participant_id_keys(study)
    resealed = recruitment.participant_id_seal(study, PID, first.pid_hash)
    assert resealed != first.pid_sealed  # a fresh nonce each time
    assert sealed_ids.unseal(keys, first.pid_sealed, study=study.pk, digest=second.pid_hash) is None
    Participant.objects.filter(pk=second.pk).update(pid_sealed=first.pid_sealed)
    assert [row.participant_id for row in payment_report(study=study).rows] == [PID, None]
    tampered = first.pid_sealed[:-4] + ("AAAA" if not first.pid_sealed.endswith("AAAA") else "BBBB")
    assert sealed_ids.unseal(keys, tampered, study=study.pk, digest=first.pid_hash) is None


def test_the_database_alone_does_not_open_an_id_and_a_rotated_secret_still_does(link, study, settings):
    participant = join(link)
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "another-site-secret-" + "x" * 40
    assert payment_report(study=study).rows[0].participant_id is None
    settings.SECRET_KEY_FALLBACKS = [old]
    assert payment_report(study=study).rows[0].participant_id == PID
    assert participant.pid_sealed  # sealed once, under the key of its time


def test_a_participant_from_before_reads_unknown_until_they_come_back(link, study, personas):
    participant = join(link)
    Participant.objects.filter(pk=participant.pk).update(pid_sealed="")
    assert payment_report(study=study).rows[0].participant_id is None
    assert api(personas["admin"]).get("/api/studies/s1/payments/").json()["participants"][0]["participant_id"] is None
    download = api(personas["admin"]).get("/api/studies/s1/payments.csv").content.decode()
    assert list(csv.DictReader(io.StringIO(download)))[0]["participant_id"] == "unknown"
    join(link, PID)  # back through the link: sealed now
    assert payment_report(study=study).rows[0].participant_id == PID


def test_the_id_reaches_no_release_bundle_profile_other_page_or_log(worked, study, personas, tmp_path, caplog):
    from annotation.services.bundles import bundle_export_bytes
    from annotation.services.workflow import review_approve, review_claim
    from scoring.profiles import profile_export
    from scoring.release import release_build

    caplog.set_level(logging.DEBUG)
    _, token = recruitment.recruitment_link_create(study=study, actor=personas["admin"], cap=5, quota=1)
    visitor = Client()  # coming back through the link's pages, as the platform sends them
    assert visitor.get(f"/join/{token}/", {"PROLIFIC_PID": PID}).status_code == 200
    assert visitor.post(f"/join/{token}/", {"PROLIFIC_PID": PID}).status_code == 302
    for item in items_of(worked["participant"]):
        review_claim(annotation_id=item.pk, actor=personas["reviewer"])
        review_approve(annotation_id=item.pk, actor=personas["reviewer"])
    api(personas["admin"]).get("/api/studies/s1/payments/")
    assert PID.encode() not in bundle_export_bytes(study=study)
    release_build(study=study, out_dir=tmp_path / "release", license="CC-BY-4.0")
    profile_export(study=study, out_dir=tmp_path / "profile", resamples=20, adjusted_resamples=5)
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert written and not [path for path in written if PID.encode() in path.read_bytes()]
    admin = Client()
    admin.force_login(personas["admin"])
    for path in ("/api/studies/s1/participants/", "/studies/s1/members/", "/api/studies/s1/annotator-quality/",
                 "/studies/s1/annotator-quality.csv", "/api/studies/s1/work-log/", "/api/studies/s1/history/",
                 "/studies/s1/history/"):
        answer = admin.get(path)
        assert answer.status_code == 200 and PID.encode() not in answer.content, path
    assert PID not in caplog.text


# --------------------------------------------------------------------------- who reads it


PATHS = ("/api/studies/s1/payments/", "/api/studies/s1/payments.csv", "/api/studies/s1/payments/bonus/?rate=9",
         "/api/studies/s1/payments/bonus.csv?rate=9", "/studies/s1/payments/")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_only_the_study_admins_read_payments(worked, personas, make_user):
    site_admin = make_user("site-admin")
    type(site_admin).objects.filter(pk=site_admin.pk).update(is_staff=True, is_superuser=True)
    for path in PATHS:
        assert signed_in(personas["admin"]).get(path).status_code == 200, path
        for persona in ("annotator", "reviewer", "researcher"):
            answer = signed_in(personas[persona]).get(path)
            assert answer.status_code == 403 and PID.encode() not in answer.content, (path, persona)
        for person in (personas["outsider"], worked["participant"].user, site_admin):
            answer = signed_in(person).get(path)
            assert answer.status_code in (403, 404) and PID.encode() not in answer.content, (path, person)
        anonymous = Client().get(path)
        assert anonymous.status_code in (302, 401, 403) and PID.encode() not in anonymous.content


# --------------------------------------------------------------------------- reading is audited


# Each answer that opens the ids, what its audit event says it read, and how many ids it held
# (the bonus at 9 an hour pays only the participant with active time; the other has nothing due).
READS = [
    ("/studies/s1/payments/", {"read": "page", "ids": 2, "participants": 2}),
    ("/studies/s1/payments/?rate=9", {"read": "page", "ids": 2, "participants": 2}),
    ("/studies/s1/payments/?rate=-1", {"read": "page", "ids": 2, "participants": 2}),  # 400, the table shown
    ("/api/studies/s1/payments/", {"read": "report (JSON)", "ids": 2, "participants": 2}),
    ("/api/studies/s1/payments.csv", {"read": "report (CSV)", "ids": 2, "participants": 2}),
    ("/api/studies/s1/payments/bonus/?rate=9", {"read": "bonus preview", "ids": 1, "participants": 2,
                                                "rate": "9.00"}),
    ("/api/studies/s1/payments/bonus.csv?rate=9", {"read": "bulk-bonus file", "ids": 1, "participants": 2,
                                                   "rate": "9.00"}),
]


@pytest.mark.parametrize(("path", "record"), READS)
def test_each_reading_of_the_ids_leaves_one_audit_event_without_an_id(worked, personas, study, path, record):
    admin = personas["admin"]
    events = AuditEvent.objects.count()
    answer = signed_in(admin).get(path)
    assert answer.status_code in (200, 400) and PID.encode() in answer.content
    assert AuditEvent.objects.count() == events + 1
    event = AuditEvent.objects.get(action="payments_read")
    assert (event.study, event.actor, event.annotation, event.at) == (study, admin, None, worked["clock"].now)
    assert event.before == {} and event.after == record
    with connection.cursor() as cursor:
        cursor.execute("SELECT CAST(before AS text), CAST(after AS text) FROM annotation_auditevent WHERE id = %s",
                       [event.pk])
        stored = " ".join(cursor.fetchone())
    assert PID not in stored and OTHER_PID not in stored


def test_a_refused_reading_opens_no_id_and_records_nothing(worked, personas):
    for path in PATHS:
        for persona in ("annotator", "reviewer", "researcher", "outsider"):
            assert signed_in(personas[persona]).get(path).status_code in (403, 404), (path, persona)
        Client().get(path)
    for bad in ("/api/studies/s1/payments/bonus/?rate=-1", "/api/studies/s1/payments/bonus.csv?rate=abc"):
        answer = signed_in(personas["admin"]).get(bad)
        assert answer.status_code == 400 and PID.encode() not in answer.content
    assert not AuditEvent.objects.filter(action="payments_read").exists()


def test_the_studys_history_shows_who_read_the_ids_and_how_many(worked, personas, study):
    admin = signed_in(personas["admin"])
    admin.get("/api/studies/s1/payments.csv")
    admin.get("/api/studies/s1/payments/bonus.csv?rate=9")
    page = admin.get("/studies/s1/history/").content.decode()
    assert page.count('data-action="payments_read"') == 2
    assert "Read the participants&#x27; platform ids: the payments report (CSV), 2 id(s) of 2 participant(s)." in page
    assert "the payments bulk-bonus file at 9.00 an hour, 1 id(s) of 2 participant(s)." in page
    history = admin.get("/api/studies/s1/history/").json()
    reads = [entry for entry in history if entry["action"] == "payments_read"]
    assert [(entry["actor"], entry["after"]["read"]) for entry in reads] == [
        ("admin", "bulk-bonus file"), ("admin", "report (CSV)")]
    assert PID not in page and PID not in str(history)


# --------------------------------------------------------------------------- the page


def test_the_payments_page_shows_the_table_the_bonus_and_the_downloads(worked, personas, study):
    study.name = "<script>alert('pay')</script>"
    study.save(update_fields=["name"])
    admin = Client()
    admin.force_login(personas["admin"])
    page = admin.get("/studies/s1/payments/").content.decode()
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert PID in page and worked["participant"].pseudonym in page and "5 min 15 s" in page
    assert 'href="/api/studies/s1/payments.csv"' in page and "bonus-file" not in page
    priced = admin.get("/studies/s1/payments/", {"rate": "9"})
    assert priced.status_code == 200
    text = priced.content.decode()
    assert "0.79" in text and 'href="/api/studies/s1/payments/bonus.csv?rate=9.00"' in text
    refused = admin.get("/studies/s1/payments/", {"rate": "-1"})
    assert refused.status_code == 400 and "The rate must be above 0" in refused.content.decode()
    members = admin.get("/studies/s1/members/").content.decode()
    assert 'href="/studies/s1/payments/"' in members


def test_the_report_costs_the_same_queries_for_more_participants(running, personas, study,
                                                                  django_assert_num_queries):
    from django.test.utils import CaptureQueriesContext

    link = recruitment.recruitment_link_create(study=running, actor=personas["admin"], cap=10, quota=1)[0]
    join(link)
    with CaptureQueriesContext(connection) as one:
        payment_report(study=study)
    for n in range(3):
        join(link, f"{OTHER_PID[:-1]}{n}")
    with django_assert_num_queries(len(one.captured_queries)):
        assert len(payment_report(study=study).rows) == 4

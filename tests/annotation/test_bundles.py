"""Study bundles: the format's checks, export and import, the round trip through an empty
database."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.errors import ImportRefused, ServiceError
from annotation.interchange import bundles
from annotation.models import Annotation, AuditEvent, Caption, Study
from annotation.rules.taxonomy import taxonomy_hash
from annotation.selectors.counted import counted_annotations, excluded_by_withdrawal
from annotation.services.bundles import bundle_export, bundle_import
from annotation.services.consent import consent_accept, consent_save
from annotation.services.guidelines import guidelines_save
from annotation.services.studies import membership_grant
from annotation.services.withdrawal import participation_withdraw
from annotation.services.workflow import (
    annotation_open,
    annotation_save,
    annotation_submit,
    annotations_assign,
    overview_lock,
    review_amend,
    review_approve,
    review_claim,
    review_return,
)
from tests.annotation.studybuild import (
    SECRET_MODEL,
    caption_record,
    captions_add,
    complete,
    fake_clip,
)
from tests.conftest import REPO, in_setup


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# ------------------------------------------------------------------ the format, without a database


def test_timestamps_are_utc_with_microseconds_and_read_back_exactly():
    moment = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert bundles.timestamp(moment) == "2026-03-04T05:06:07.000000Z"
    assert bundles.parse_timestamp(bundles.timestamp(moment)) == moment


def test_the_encoding_is_canonical_whatever_the_key_order():
    assert bundles.dumps({"b": 1, "a": {"d": [1.5], "c": "é"}}) == bundles.dumps(
        {"a": {"c": "é", "d": [1.5]}, "b": 1}
    )
    assert bundles.dumps({"a": 1}).endswith(b"}\n")


def test_a_file_that_is_not_a_bundle_is_refused_saying_so():
    with pytest.raises(bundles.BundleError, match="not JSON"):
        bundles.loads(b"{oops")
    with pytest.raises(bundles.BundleError, match="not a study bundle"):
        bundles.loads(b'{"format": "something-else"}')


def test_a_bundle_of_a_newer_format_version_is_refused_with_what_to_do():
    data = json.dumps({"format": bundles.FORMAT, "format_version": bundles.FORMAT_VERSION + 1})
    with pytest.raises(bundles.BundleError, match="newer Redline"):
        bundles.loads(data)


# --------------------------------------------------------------------------- export and import


@pytest.fixture
def worked(study, personas, make_user):
    """Study s1: two clips, two models, a reference; annotations approved, amended, returned,
    claimed."""
    second = make_user("annotator2")
    membership_grant(study=study, user=second, role="annotator")
    fake_clip(study, "a")
    fake_clip(study, "b")
    captions_add(
        study,
        [caption_record(clip, model) for clip in ("a", "b") for model in (SECRET_MODEL, "m2")],
    )
    from annotation.models import Reference

    Reference.objects.create(
        clip=study.clips.get(name="a"), source="expert", text="Bars.",
        text_sha256=hashlib.sha256(b"Bars.").hexdigest(),
    )
    with in_setup(study):
        annotations_assign(
            study=study,
            annotators=[personas["annotator"], second],
            overlap_share=0.5,
            design="clip_blocks",
            actor=personas["admin"],
        )
    reviewer = personas["reviewer"]
    items = list(Annotation.objects.order_by("pk"))
    example = {"mode": "camera", "excerpt": "It pans.", "correction": "It is still.", "why": "Tripod."}
    guidelines_save(study=study, actor=personas["admin"], text="# Rules\n\nJudge each window.\n", examples=[example])
    done = [complete(item, item.annotator, active_seconds=12.5) for item in items[:2]]
    guidelines_save(study=study, actor=personas["admin"], text="# Rules\n\nJudge each window and count.\n")
    done += [complete(item, item.annotator, active_seconds=12.5) for item in items[2:4]]
    review_claim(annotation_id=done[0].pk, actor=reviewer)
    review_approve(annotation_id=done[0].pk, actor=reviewer)
    review_claim(annotation_id=done[1].pk, actor=reviewer)
    review_amend(
        annotation_id=done[1].pk, actor=reviewer, changes={"overview": {"modes": ["omission"]}}
    )
    review_claim(annotation_id=done[2].pk, actor=reviewer)
    review_return(annotation_id=done[2].pk, actor=reviewer,
                  units=[{"unit": "window:1", "comment": "Window 2 is fine."}])
    review_claim(annotation_id=done[3].pk, actor=reviewer)
    annotation_open(annotation=items[4], actor=items[4].annotator)
    return study


def test_a_bundle_holds_every_part_of_the_study_by_name(worked):
    bundle = bundle_export(study=worked)
    assert bundles.check(bundle) == []
    assert {c["name"] for c in bundle["clips"]} == {"a", "b"}
    assert {m["name"] for m in bundle["models"]} == {SECRET_MODEL, "m2"}
    assert len(bundle["captions"]) == 4 and len(bundle["captions"][0]["windows"]) == 3
    assert len(bundle["references"]) == 1
    states = sorted(a["state"] for a in bundle["annotations"])
    assert states.count("approved") == 2 and "returned" in states and "in_review" in states
    amended = next(a for a in bundle["annotations"] if a["final"] == "qc")
    assert amended["passes"]["annotator"]["overview"]["modes"] == ["factual"]
    assert amended["passes"]["qc"]["overview"]["modes"] == ["omission"]
    actions = [event["action"] for event in bundle["audit"]]
    assert {
        "assign",
        "open",
        "save",
        "lock_overview",
        "submit",
        "claim",
        "approve",
        "amend",
        "return",
    } <= set(actions)
    assert len(bundle["audit"]) == AuditEvent.objects.filter(study=worked).count()
    text = bundles.dumps(bundle).decode()
    assert '"id"' not in text  # database ids stay out


def test_importing_under_another_slug_and_exporting_again_gives_the_same_bundle(worked):
    original = bundle_export(study=worked)
    report = bundle_import(data=bundles.dumps(original), slug="s1-copy", grant_existing=True)
    assert report.counts["annotations"] == len(original["annotations"])
    again = bundle_export(study=report.study)
    assert again["study"].pop("slug") == "s1-copy"
    original["study"].pop("slug")
    # The copy's clips are files of its own media folders.
    assert again["clips"][0]["files"]["original"] == "clips/original/s1-copy/a.mp4"
    for clip in original["clips"]:
        clip["files"] = {k: v.replace("/s1/", "/s1-copy/") for k, v in clip["files"].items()}
    assert bundles.dumps(again) == bundles.dumps(original)


def submitted_risks(study):
    return {
        (a.caption.clip.name, a.caption.model.name, a.annotator.username): (a.risk, a.risk_reasons)
        for a in Annotation.objects.filter(
            caption__clip__study=study, state__in=["submitted", "in_review", "approved"]
        ).select_related("caption__clip", "caption__model", "annotator")
    }


def test_imported_submitted_annotations_carry_the_review_risk_submitting_gave_them(worked):
    original = submitted_risks(worked)
    assert len(original) == 3 and all(score > 0 for score, _ in original.values())
    report = bundle_import(data=bundles.dumps(bundle_export(study=worked)), slug="s1-copy", grant_existing=True)
    assert submitted_risks(report.study) == original


def test_imported_annotations_that_disagree_carry_their_risk_and_reasons(study, personas, make_user):
    second = make_user("annotator2")
    membership_grant(study=study, user=second, role="annotator")
    fake_clip(study, "a")
    captions_add(study, [caption_record("a")])
    annotations_assign(study=study, annotators=[personas["annotator"], second], overlap_share=1.0)
    quick, rewrite = Annotation.objects.order_by("annotator__username")
    complete(quick, quick.annotator, overview={"verdict": "accept"}, active_seconds=3)
    complete(rewrite, rewrite.annotator, overview={
        "verdict": "reject", "modes": ["factual"],
        "text": "Two dogs chase a red ball across a wet lawn while a child laughs and claps.",
    })
    original = submitted_risks(study)
    reasons = {reason for _, why in original.values() for reason in why}
    assert "annotators disagree on the overview" in reasons and "near-total overview repair" in reasons
    report = bundle_import(data=bundles.dumps(bundle_export(study=study)), slug="s1-copy", grant_existing=True)
    assert submitted_risks(report.study) == original


def test_a_study_that_already_exists_is_not_imported_again(worked):
    data = bundles.dumps(bundle_export(study=worked))
    with pytest.raises(ServiceError, match="already exists here .same taxonomy"):
        bundle_import(data=data)


def reworded_taxonomy(bundle: dict) -> dict:
    """The bundle with its taxonomy's first definition reworded: a new, consistent hash."""
    taxonomy = bundle["taxonomies"][0]
    taxonomy["modes"][0]["definition"] += " Reworded."
    taxonomy["content_hash"] = taxonomy_hash(taxonomy["modes"], taxonomy["precedence_rules"])
    bundle["study"]["taxonomy"] = taxonomy["content_hash"]
    for annotation in bundle["annotations"]:
        annotation["taxonomy"] = taxonomy["content_hash"]
    return bundle


def test_a_bundle_whose_taxonomy_differs_from_the_existing_same_slug_study_is_refused(worked):
    bundle = reworded_taxonomy(bundle_export(study=worked))
    before = Study.objects.count()
    with pytest.raises(
        ServiceError, match=r"already exists here with taxonomy redline v1 .*taxonomy never changes"
    ):
        bundle_import(data=bundles.dumps(bundle))
    assert Study.objects.count() == before


def test_a_different_taxonomy_under_a_new_slug_is_stored_as_a_new_version(worked):
    bundle = reworded_taxonomy(bundle_export(study=worked))
    report = bundle_import(data=bundles.dumps(bundle), slug="reworded", grant_existing=True)
    assert str(report.study.taxonomy) == "redline v2"
    assert report.study.taxonomy.content_hash == bundle["taxonomies"][0]["content_hash"]
    assert any("stored as redline v2" in note for note in report.notes)


def test_a_hand_edited_taxonomy_hash_is_refused(worked):
    bundle = bundle_export(study=worked)
    bundle["taxonomies"][0]["modes"][0]["name"] = "Edited"
    with pytest.raises(ImportRefused, match="content hash does not match"):
        bundle_import(data=bundles.dumps(bundle), slug="edited")


def test_a_broken_bundle_is_refused_whole_listing_every_problem(worked):
    bundle = bundle_export(study=worked)
    bundle["captions"][0]["clip"] = "no-such-clip"
    bundle["annotations"][0]["annotator"] = "nobody-listed"
    bundle["audit"][0]["at"] = "yesterday"
    with pytest.raises(ImportRefused) as refused:
        bundle_import(data=bundles.dumps(bundle), slug="broken")
    text = str(refused.value)
    assert "no-such-clip" in text and "nobody-listed" in text and "UTC timestamp" in text
    assert not Study.objects.filter(slug="broken").exists()


def test_users_missing_here_are_created_without_a_usable_password(worked):
    bundle = bundle_export(study=worked)
    bundle["users"].append("ghost")
    bundle["members"].append(
        {"user": "ghost", "role": "researcher", "created_at": bundle["study"]["created_at"]}
    )
    report = bundle_import(data=bundles.dumps(bundle), slug="with-ghost", grant_existing=True)
    assert report.users_created == ["ghost"]
    assert not get_user_model().objects.get(username="ghost").has_usable_password()


def test_the_commands_write_and_read_a_bundle_and_refuse_with_a_clear_message(worked, tmp_path):
    out = tmp_path / "s1.json"
    call_command("export_study", "--study", "s1", "--out", str(out), stderr=StringIO())
    assert json.loads(out.read_text())["format_version"] == bundles.FORMAT_VERSION
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_study", str(out), stdout=StringIO())
    printed = StringIO()
    call_command(
        "import_study", str(out), "--slug", "s1-again", "--grant-existing", stdout=printed
    )
    assert "Imported study 's1-again'" in printed.getvalue()
    with pytest.raises(CommandError, match="No study 'nope'"):
        call_command("export_study", "--study", "nope", "--out", str(tmp_path / "x.json"))


# ------------------------------------------------------ the demo study, through an empty database


def _complete_any(annotation: Annotation) -> Annotation:
    """A valid annotator pass for any caption: reject the overview and the first window."""
    person = annotation.annotator
    annotation = annotation_open(annotation=annotation, actor=person)
    caption = annotation.caption
    annotation = annotation_save(
        annotation_id=annotation.pk,
        actor=person,
        base_version=annotation.version,
        changes={
            "overview": {
                "verdict": "reject",
                "text": caption.overview + " Corrected.",
                "modes": ["factual"],
            },
            "active_seconds": 42,
            "telemetry": {"watched_share": 0.9},
        },
    )
    annotation = overview_lock(
        annotation_id=annotation.pk, actor=person, base_version=annotation.version
    )
    windows = [{"index": w.index, "verdict": "accept"} for w in caption.windows.all()]
    if windows:
        windows[0] = {
            "index": 0,
            "verdict": "reject",
            "scene": "Corrected scene.",
            "modes": ["omission"],
        }
    annotation = annotation_save(
        annotation_id=annotation.pk,
        actor=person,
        base_version=annotation.version,
        changes={"windows": windows, "segmentation": {"verdict": "accept"}},
    )
    return annotation_submit(
        annotation_id=annotation.pk, actor=person, base_version=annotation.version
    )


def _run(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.django_db
def test_demo_study_after_a_full_cycle_survives_export_import_into_an_empty_database_and_export(
    tmp_path, make_user, ffmpeg_available
):
    from annotation.services.demo import demo_build

    study = demo_build().study
    users = get_user_model().objects
    # The demo gives every caption to one of its three annotators, one model per clip; a
    # fourth annotator takes second annotations, one caption per clip at most.
    second = make_user("annotator4")
    membership_grant(study=study, user=second, role="annotator")
    annotations_assign(
        study=study, annotators=[users.get(username="annotator"), second], overlap_share=0.5, seed=3
    )
    reviewer = users.get(username="reviewer")
    ordered = list(Annotation.objects.filter(caption__clip__study=study).order_by("pk"))
    doubled = [a for a in ordered if a.annotator == second]
    first_of_doubled = [
        a
        for a in ordered
        if a.annotator != second and a.caption_id in {d.caption_id for d in doubled}
    ]
    submitted = [_complete_any(a) for a in first_of_doubled[:3] + doubled[:3]]
    review_claim(annotation_id=submitted[0].pk, actor=reviewer)
    review_approve(annotation_id=submitted[0].pk, actor=reviewer)
    review_claim(annotation_id=submitted[1].pk, actor=reviewer)
    review_amend(
        annotation_id=submitted[1].pk, actor=reviewer, changes={"overview": {"modes": ["omission"]}}
    )
    review_claim(annotation_id=submitted[3].pk, actor=reviewer)
    returned = review_return(
        annotation_id=submitted[3].pk, actor=reviewer,
        units=[{"unit": "window:0", "comment": "Look at window 1 again."}],
    )
    reopened = annotation_open(annotation=returned, actor=second)
    resubmitted = annotation_submit(
        annotation_id=reopened.pk, actor=second, base_version=reopened.version,
        replies={"window:0": "I looked again; it is right."},
    )
    review_claim(annotation_id=resubmitted.pk, actor=reviewer)
    review_approve(annotation_id=resubmitted.pk, actor=reviewer)
    review_claim(annotation_id=submitted[4].pk, actor=reviewer)
    review_claim(annotation_id=submitted[5].pk, actor=reviewer)
    review_return(
        annotation_id=submitted[5].pk, actor=reviewer,
        units=[{"unit": "overview", "comment": "The overview misses the cut."}],
    )
    untouched = (
        Annotation.objects.filter(caption__clip__study=study, state="assigned")
        .order_by("pk")
        .first()
    )
    annotation_open(annotation=untouched, actor=untouched.annotator)
    # A consent accepted by one annotator, another withdrawn with their work erased.
    consent_save(study=study, actor=users.get(username="admin"), text="You may stop at any time.")
    consent_accept(study=study, user=users.get(username="annotator"), version=1)
    participation_withdraw(study=study, user=users.get(username="annotator3"), erase=True)

    first = tmp_path / "first.json"
    call_command("export_study", "--study", study.slug, "--out", str(first), stderr=StringIO())
    bundle = json.loads(first.read_text())
    assert len(bundle["captions"]) == Caption.objects.filter(clip__study=study).count()
    assert {a["final"] for a in bundle["annotations"]} == {None, "annotator", "qc"}
    assert {a["state"] for a in bundle["annotations"]} == set(bundles.STATES)
    assert [(w["user"], w["erase_requested"]) for w in bundle["withdrawals"]] == [("annotator3", True)]
    assert [(a["user"], a["number"]) for a in bundle["consent_acceptances"]] == [("annotator", 1)]

    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DATABASE_", "CELERY_", "PYTEST", "DJANGO_"))
        },
        "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        "REDLINE_VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "CELERY_TASK_ALWAYS_EAGER": "1",
    }
    _run("migrate", "--no-input", "-v0", env=env)
    printed = _run("import_study", str(first), env=env)
    assert f"Imported study {study.slug!r}" in printed
    again = tmp_path / "again.json"
    _run("export_study", "--study", study.slug, "--out", str(again), env=env)
    assert again.read_bytes() == first.read_bytes()


def test_shot_changes_travel_in_the_bundle(worked):
    from annotation.models import Clip

    Clip.objects.filter(study=worked, name="a").update(shot_changes=[1.0, 2.52])
    bundle = bundle_export(study=worked)
    assert {c["name"]: c["shot_changes"] for c in bundle["clips"]} == {"a": [1.0, 2.52], "b": None}
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-shots", grant_existing=True)
    copied = {c.name: c.shot_changes for c in Clip.objects.filter(study=report.study)}
    assert copied == {"a": [1.0, 2.52], "b": None}


def test_a_version_1_bundle_is_read_with_shot_changes_not_yet_detected(worked):
    from annotation.models import Clip

    old = bundle_export(study=worked)
    old["format_version"] = 1
    for clip in old["clips"]:
        del clip["shot_changes"]
    report = bundle_import(data=bundles.dumps(old), slug="s1-old", grant_existing=True)
    assert [c.shot_changes for c in Clip.objects.filter(study=report.study)] == [None, None]
    assert bundle_export(study=report.study)["format_version"] == bundles.FORMAT_VERSION


def test_shot_changes_that_are_not_a_list_of_seconds_are_refused_naming_the_clip(worked):
    bundle = bundle_export(study=worked)
    bundle["clips"][1]["shot_changes"] = [1.0, "two"]
    with pytest.raises(bundles.BundleError) as refused:
        bundles.loads(bundles.dumps(bundle))
    assert 'clips[1]: "shot_changes" must be null or a list of seconds' in str(refused.value)


# ------------------------------------------------------------------ tampered bundles


def _set(path: str, value):
    """A tampering that sets the field at ``path`` (``clips.0.name``) to ``value``."""

    def tamper(bundle: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = bundle
        for part in parents:
            target = target[part]
        target[last] = value

    return tamper


def _drop(path: str):
    def tamper(bundle: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target = bundle
        for part in parents:
            target = target[part]
        del target[last]

    return tamper


def _text(old: str, new: str):
    """A tampering of the file's text: the first ``old`` becomes ``new``."""

    def tamper(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)

    return tamper


TAMPERED = {
    "invalid slug": (_set("study.slug", "bad slug!"), "study.slug: the slug 'bad slug!'"),
    "clip name with a slash": (_set("clips.0.name", "x/y"), "clips[0].name: the clip name 'x/y' "
                                                            "contains a slash"),
    "empty clip name": (_set("clips.0.name", ""), "clips[0].name: the clip name is empty"),
    "NaN duration": (_text('"duration": 6.0', '"duration": NaN'),
                     "clips[0].duration: nan is not a finite number"),
    "infinite fps": (_text('"fps": 25.0', '"fps": Infinity'),
                     "clips[0].fps: inf is not a finite number"),
    "alias equal to a model's name": (_set("models.1.alias", "m2"),
                                      "models[1].alias: 'm2' is the name of a model"),
    "one alias for two models": (_set("models.1.alias", "Model A"),
                                 "the alias 'model a' is given to two models"),
    "file of another study": (_set("clips.0.files.original", "clips/original/s2/a.mp4"),
                              "clips[0].files.original: 'clips/original/s2/a.mp4' is not inside "
                              "the study's own folder clips/original/s1/"),
    "file path climbing out": (_set("clips.0.files.poster", "clips/poster/s1/../../s2/a.jpg"),
                               "clips[0].files.poster: 'clips/poster/s1/../../s2/a.jpg' is not "
                               "inside"),
    "absolute file path": (_set("clips.0.files.original", "/etc/passwd"),
                           "clips[0].files.original: '/etc/passwd' is not inside"),
    "duplicate JSON key": (_text('"codec": "h264"', '"codec": "h264", "codec": "vp9"'),
                           "clips[0]: the key 'codec' is given twice"),
    "NUL in a text": (_set("captions.0.overview", "a\x00b"),
                      "captions[0].overview: contains a NUL character"),
    "whole number out of range": (_set("clips.0.width", 10**40),
                                  "clips[0]: 'width' is 10000000000000000000000000000000000000000"
                                  ", out of range"),
    "negative size": (_set("clips.0.size_bytes", -1), "clips[0]: 'size_bytes' is -1, out of range"),
    "number with 5,000 digits": (_text('"width": 160', '"width": ' + "9" * 5000),
                                 "not JSON that can be read"),
    "nesting 100,000 deep": (_text('"meta": {', '"meta": {"deep": ' + "[" * 100_000
                                   + "]" * 100_000 + ", "), "nested too deeply"),
    "clip without its codec": (_drop("clips.0.codec"), "clips[0]: 'codec' is missing"),
    "annotation without its reviewer key": (_drop("annotations.0.reviewer"),
                                            "annotations[0]: 'reviewer' is missing"),
    "audit event without its actor key": (_drop("audit.0.actor"), "audit[0]: 'actor' is missing"),
    "corrected window without its start": (_drop("annotations.0.passes.annotator.windows.0.start"),
                                           "annotations[0].passes.annotator.windows[0]: 'start' "
                                           "is missing"),
    "window ending where it starts": (_set("captions.0.windows.0.end", 0.0),
                                      "must be 0 or more and before end 0.0"),
    "two windows with one index": (_set("captions.0.windows.1.index", 0),
                                   "captions[0].windows[1]: a second window 0"),
    "codec longer than its column": (_set("clips.0.codec", "x" * 41),
                                     "clips[0]: 'codec': Ensure this value has at most 40"),
    "unknown clip property": (_set("clips.0.properties.content_type", "bogus"),
                              "clips[0]: 'content_type': Value 'bogus' is not a valid choice"),
    "model name longer than its column": (_set("models.0.name", "m" * 201),
                                          "models[0].name: must be 1 to 200 characters"),
    "clip lasting 1e308 seconds": (_set("clips.0.duration", 1e308),
                                   "clips[0].duration: must be more than 0 and at most 86,400, "
                                   "not 1e+308"),
    "markup in a user name": (_set("users.0", "<img src=x onerror=alert(1)>"),
                              "users[0]: the username '<img src=x onerror=alert(1)>' may hold "
                              "only letters, digits"),
    "text in watched_share": (_set("annotations.0.telemetry.watched_share", "all of it"),
                              "annotations[0].telemetry.watched_share: must be a number from 0 "
                              "to 1, not 'all of it'"),
    "unknown mode level": (_set("taxonomies.0.modes.0.level", "galaxy"),
                           "taxonomies[0].modes[0].level: 'galaxy' is not one of unit, caption"),
    "wrong reference hash": (_set("references.0.text_sha256", "0" * 64),
                             "references[0].text_sha256: does not match the reference's text"),
    "unknown study state": (_set("study.state", "paused"),
                            "study.state: 'paused' is not one of setup, running, closed, archived"),
    "study state not text": (_set("study.state", 1), "study: 'state' is missing or not text"),
    "unknown caption language": (_set("study.caption_language", "klingon"),
                                 "study.caption_language: 'klingon' is not one of en, zh, ja, other"),
    "overlap above 1": (_set("study.overlap_share", 1.5),
                        "study.overlap_share: must be a number from 0 to 1, not 1.5"),
    "negative overlap": (_set("study.overlap_share", -0.1),
                         "study.overlap_share: must be a number from 0 to 1, not -0.1"),
    "overlap as text": (_set("study.overlap_share", "half"),
                        "study: 'overlap_share' is missing or not a number"),
    "negative undo time": (_set("study.undo_seconds", -1),
                           "study.undo_seconds: must be null (the site's UNDO_SECONDS) or a whole "
                           "number of seconds from 0 to 3,600, not -1"),
    "huge undo time": (_set("study.undo_seconds", 10**12),
                       "study.undo_seconds: must be null (the site's UNDO_SECONDS) or a whole number "
                       "of seconds from 0 to 3,600, not 1000000000000"),
    "undo time in fractions": (_set("study.undo_seconds", 2.5), "study.undo_seconds: must be null"),
    "undo time as true": (_set("study.undo_seconds", True), "study.undo_seconds: must be null"),
    "study without its undo time key": (_drop("study.undo_seconds"),
                                        "study: 'undo_seconds' is missing (write null for none)"),
}


@pytest.mark.parametrize("variant", TAMPERED, ids=list(TAMPERED))
def test_a_tampered_bundle_is_refused_saying_where_and_why_and_nothing_is_written(worked, variant):
    tamper, expected = TAMPERED[variant]
    bundle = bundle_export(study=worked)
    # The export's own values, which the text tamperings look for.
    assert bundle["clips"][0]["duration"] == 6.0 and bundle["clips"][0]["codec"] == "h264"
    if tamper.__code__.co_varnames[:1] == ("text",):
        data = tamper(bundles.dumps(bundle).decode())
    else:
        tamper(bundle)
        data = json.dumps(bundle)
    counts = (Study.objects.count(), Caption.objects.count(), get_user_model().objects.count())
    with pytest.raises(ImportRefused) as refused:
        bundle_import(data=data, slug="tampered", grant_existing=True)
    assert expected in str(refused.value)
    assert not Study.objects.filter(slug="tampered").exists()
    assert counts == (
        Study.objects.count(), Caption.objects.count(), get_user_model().objects.count()
    )


def test_an_invalid_slug_given_on_the_command_line_is_refused(worked):
    data = bundles.dumps(bundle_export(study=worked))
    with pytest.raises(ImportRefused, match="--slug: the slug 'no/slashes' is not usable"):
        bundle_import(data=data, slug="no/slashes", grant_existing=True)


def test_roles_for_existing_accounts_are_listed_and_granted_only_when_confirmed(worked, tmp_path):
    out = tmp_path / "s1.json"
    out.write_bytes(bundles.dumps(bundle_export(study=worked)))
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(out), "--slug", "copy", stdout=StringIO())
    assert "gives roles in study 'copy' to 5 account(s) that already exist here: admin (admin), " \
        "annotator (annotator), annotator2 (annotator), researcher (researcher), " \
        "reviewer (reviewer). Nothing was imported" in str(refused.value)
    assert not Study.objects.filter(slug="copy").exists()

    printed = StringIO()
    call_command("import_study", str(out), "--slug", "copy", "--grant-existing", stdout=printed)
    assert "Granted roles to 5 existing account(s): admin (admin)," in printed.getvalue()
    copy = Study.objects.get(slug="copy")
    assert copy.memberships.filter(user__username="admin", role="admin").exists()


def test_the_bundle_carries_the_design_positions_exposures_and_the_return_thread(worked):
    bundle = bundle_export(study=worked)
    assert bundle["study"]["assignment_design"] == "clip_blocks"
    assert bundle["study"]["assignment_seed"] == Study.objects.get(pk=worked.pk).assignment_seed
    assert all(a["queue_position"] >= 1 and a["exposure"] >= 1 for a in bundle["annotations"])
    (returned,) = [a for a in bundle["annotations"] if a["returned_units"]]
    assert returned["returned_units"][0]["unit"] == "window:1"
    assert returned["returned_units"][0]["comment"] == "Window 2 is fine."
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-design", grant_existing=True)
    copy = Annotation.objects.filter(caption__clip__study=report.study)
    assert sorted(copy.values_list("queue_position", "exposure")) == sorted(
        Annotation.objects.filter(caption__clip__study=worked).values_list("queue_position", "exposure")
    )


def test_a_version_2_bundle_reads_as_clip_blocks_without_positions_or_named_units(worked):
    old = bundle_export(study=worked)
    old["format_version"] = 2
    for field in ("assignment_design", "spread_gap", "assignment_seed"):
        del old["study"][field]
    for annotation in old["annotations"]:
        for field in ("queue_position", "exposure", "returned_units"):
            del annotation[field]
    report = bundle_import(data=bundles.dumps(old), slug="s1-v2", grant_existing=True)
    assert report.study.assignment_design == "clip_blocks"
    copy = Annotation.objects.filter(caption__clip__study=report.study)
    assert set(copy.values_list("queue_position", "exposure")) == {(None, None)}
    assert bundle_export(study=report.study)["format_version"] == bundles.FORMAT_VERSION


def test_an_unknown_design_in_a_bundle_is_refused_naming_the_field(worked):
    bundle = bundle_export(study=worked)
    bundle["study"]["assignment_design"] = "by-vibes"
    with pytest.raises(bundles.BundleError, match="study.assignment_design"):
        bundles.loads(bundles.dumps(bundle))


def test_a_bundle_without_media_imports_as_documented_and_its_videos_answer_404(worked, client):
    # docs/bundle-format.md: files.original is "" when there is none. The import refused it.
    bundle = bundle_export(study=worked)
    for clip in bundle["clips"]:
        clip["files"] = {"original": "", "proxy": "", "poster": ""}
    bundle_import(data=json.dumps(bundle), slug="no-media", grant_existing=True)
    imported = Study.objects.get(slug="no-media")
    clip = imported.clips.order_by("name").first()
    assert (clip.original.name, clip.poster.name) == ("", "")
    client.force_login(get_user_model().objects.get(username="admin"))
    response = client.get(f"/clips/{clip.pk}/video")
    assert response.status_code == 404


# ------------------------------------------------------------------ the study's settings and state


def _settings_of(study: Study) -> tuple:
    study.refresh_from_db()
    return (study.state, study.caption_language, study.overlap_share, study.undo_seconds)


def _same_bundle_as(copy: Study, original: dict) -> None:
    """The copy exports as the original did, but for its slug and its media folders."""
    again = bundle_export(study=copy)
    original = json.loads(bundles.dumps(original))
    slug = original["study"].pop("slug")
    assert again["study"].pop("slug") == copy.slug
    for clip in original["clips"]:
        clip["files"] = {k: v.replace(f"/{slug}/", f"/{copy.slug}/") for k, v in clip["files"].items()}
    assert bundles.dumps(again) == bundles.dumps(original)


@pytest.mark.parametrize("state", ["setup", "running", "closed", "archived"])
def test_the_study_settings_and_state_travel_in_the_bundle_and_come_back_identical(worked, state):
    with in_setup(worked):
        # caption_language is frozen once a study left setup.
        Study.objects.filter(pk=worked.pk).update(
            caption_language="ja", overlap_share=0.25, undo_seconds=45
        )
        worked.refresh_from_db()
        if state == "setup":
            bundle = bundle_export(study=worked)
            report = bundle_import(data=bundles.dumps(bundle), slug="s1-copy", grant_existing=True)
    if state != "setup":
        for move in {"running": [], "closed": ["closed"], "archived": ["closed", "archived"]}[state]:
            Study.objects.filter(pk=worked.pk).update(state=move)
        worked.refresh_from_db()
        bundle = bundle_export(study=worked)
        report = bundle_import(data=bundles.dumps(bundle), slug="s1-copy", grant_existing=True)
    assert {k: bundle["study"][k] for k in ("state", "caption_language", "overlap_share",
                                            "undo_seconds")} == {
        "state": state, "caption_language": "ja", "overlap_share": 0.25, "undo_seconds": 45
    }
    copy = Study.objects.get(pk=report.study.pk)
    assert copy.slug == "s1-copy"
    assert _settings_of(copy) == (state, "ja", 0.25, 45)
    _same_bundle_as(copy, bundle)


def test_an_imported_study_keeps_the_lifecycle_rules_of_its_state(worked):
    from django.db import DatabaseError, transaction

    Study.objects.filter(pk=worked.pk).update(state="closed")
    worked.refresh_from_db()
    report = bundle_import(
        data=bundles.dumps(bundle_export(study=worked)), slug="s1-closed", grant_existing=True
    )
    copy = Study.objects.filter(pk=report.study.pk)
    for change in ({"caption_language": "zh"}, {"state": "running"}, {"state": "setup"}):
        with pytest.raises(DatabaseError), transaction.atomic():
            copy.update(**change)
    copy.update(state="archived")
    assert copy.get().state == "archived"


def test_the_release_secret_never_leaves_and_an_imported_study_gets_its_own(worked):
    worked.refresh_from_db()
    bundle = bundle_export(study=worked)
    text = bundles.dumps(bundle).decode()
    assert "release_secret" not in text and worked.release_secret not in text
    # A bundle that carries one anyway (written by hand) does not set it.
    bundle["study"]["release_secret"] = worked.release_secret
    report = bundle_import(data=json.dumps(bundle), slug="s1-secret", grant_existing=True)
    secret = Study.objects.get(pk=report.study.pk).release_secret
    assert len(secret) == 64 and secret != worked.release_secret


def test_a_version_3_bundle_reads_as_a_running_study_in_english_without_overlap_or_undo_time(worked):
    with in_setup(worked):
        Study.objects.filter(pk=worked.pk).update(
            caption_language="zh", overlap_share=0.5, undo_seconds=30
        )
    Study.objects.filter(pk=worked.pk).update(state="closed")
    worked.refresh_from_db()
    old = bundle_export(study=worked)
    old["format_version"] = 3
    for field in ("state", "caption_language", "overlap_share", "undo_seconds"):
        del old["study"][field]
    report = bundle_import(data=bundles.dumps(old), slug="s1-v3", grant_existing=True)
    assert _settings_of(report.study) == ("running", "en", 0, None)
    again = bundle_export(study=report.study)
    assert again["format_version"] == bundles.FORMAT_VERSION == 6
    assert len(again["annotations"]) == len(old["annotations"])


def test_the_bundle_carries_the_guideline_versions_and_the_version_of_each_verdict(worked):
    bundle = bundle_export(study=worked)
    assert [(g["number"], g["created_by"]) for g in bundle["guidelines"]] == [(1, "admin"), (2, "admin")]
    assert bundle["guidelines"][0]["examples"][0]["mode"] == "camera"
    submitted = {a["passes"]["annotator"]["guideline_version"] for a in bundle["annotations"]
                 if a["passes"]["annotator"] and a["submitted_at"]}
    assert submitted == {1, 2}
    assert {a["review_guideline_version"] for a in bundle["annotations"] if a["state"] == "approved"} == {2}
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-guided", grant_existing=True)
    assert report.counts["guidelines"] == 2
    assert bundle_export(study=report.study)["guidelines"] == bundle["guidelines"]


def test_a_version_4_bundle_reads_as_a_study_without_guidelines(worked):
    old = bundle_export(study=worked)
    old["format_version"] = 4
    del old["guidelines"]
    for annotation in old["annotations"]:
        del annotation["review_guideline_version"]
        for correction in annotation["passes"].values():
            if correction:
                del correction["guideline_version"]
    report = bundle_import(data=bundles.dumps(old), slug="s1-v4", grant_existing=True)
    again = bundle_export(study=report.study)
    assert again["guidelines"] == []
    assert {a["review_guideline_version"] for a in again["annotations"]} == {None}


def test_a_verdict_naming_a_guideline_version_the_bundle_lacks_is_refused(worked):
    bundle = bundle_export(study=worked)
    bundle["annotations"][0]["review_guideline_version"] = 7
    bundle["guidelines"][1]["text"] = "x" * 100_001
    problems = bundles.check(bundle)
    assert any("review_guideline_version" in p for p in problems)
    assert any(p.startswith("guidelines[1].text:") and "100 kB" in p for p in problems)


def test_the_bundle_knows_the_states_and_languages_the_database_does():
    from annotation.models import CaptionLanguage, StudyState

    assert bundles.STUDY_STATES == tuple(StudyState.values)
    assert bundles.CAPTION_LANGUAGES == tuple(CaptionLanguage.values)


# ------------------------------------------------------------------ withdrawals and consent (version 6)


def _approved_work(study: Study):
    return Annotation.objects.filter(caption__clip__study=study, state="approved")


@pytest.fixture
def withdrawn(worked, personas):
    """Study s1 with a consent text (version 1 drafted in setup, version 2 while it runs) accepted
    by one annotator, and the annotator of an approved annotation withdrawn (not erased)."""
    admin = personas["admin"]
    with in_setup(worked):
        consent_save(study=worked, actor=admin, text="# Consent\n\nYou may stop at any time.\n")
    consent_save(study=worked, actor=admin, text="# Consent\n\nYou may stop at any time; your work goes.\n")
    leaver = _approved_work(worked).order_by("pk").first().annotator
    stayer = next(p for p in Annotation.objects.filter(caption__clip__study=worked).values_list(
        "annotator__username", flat=True) if p != leaver.username)
    consent_accept(study=worked, user=get_user_model().objects.get(username=stayer), version=2)
    participation_withdraw(study=worked, user=leaver)
    return worked


def test_the_bundle_carries_withdrawals_and_consent_and_comes_back_identical(withdrawn):
    bundle = bundle_export(study=withdrawn)
    assert bundles.check(bundle) == []
    [withdrawal] = bundle["withdrawals"]
    assert withdrawal["erased_at"] is None and withdrawal["erase_requested"] is False
    assert withdrawal["user"] in bundle["users"] and withdrawal["pseudonym"] == withdrawal["user"]
    assert [(v["number"], v["created_by"]) for v in bundle["consent_versions"]] == [(1, "admin"), (2, "admin")]
    [accepted] = bundle["consent_acceptances"]
    assert accepted["number"] == 2 and accepted["user"] != withdrawal["user"]
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-withdrawn", grant_existing=True)
    assert (report.counts["withdrawals"], report.counts["consent_versions"], report.counts["consent_acceptances"]) == (
        1, 2, 1)
    _same_bundle_as(report.study, bundle)


def test_an_imported_study_still_leaves_the_withdrawn_persons_work_out_of_every_count(withdrawn):
    excluded = excluded_by_withdrawal(_approved_work(withdrawn)).count()
    counted = counted_annotations(_approved_work(withdrawn)).count()
    assert excluded >= 1
    report = bundle_import(data=bundles.dumps(bundle_export(study=withdrawn)), slug="s1-restored",
                           grant_existing=True)
    copy = report.study
    assert excluded_by_withdrawal(_approved_work(copy)).count() == excluded
    assert counted_annotations(_approved_work(copy)).count() == counted
    from scoring.profiles import final_annotations

    assert {a.annotator.username for a in final_annotations(copy)} == {
        a.annotator.username for a in final_annotations(withdrawn)}


def test_an_erased_persons_withdrawal_travels_with_its_counts_and_no_content(worked):
    leaver = _approved_work(worked).order_by("pk").first().annotator
    participation_withdraw(study=worked, user=leaver, erase=True)
    bundle = bundle_export(study=worked)
    [withdrawal] = bundle["withdrawals"]
    assert withdrawal["erase_requested"] and withdrawal["erased_at"] and withdrawal["erased"] >= 1
    assert set(withdrawal) == {"user", "pseudonym", "at", "released", "erase_requested", "erased_at", "erased"}
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-erased", grant_existing=True)
    _same_bundle_as(report.study, bundle)


def test_a_version_5_bundle_reads_as_a_study_without_withdrawals_or_consent(withdrawn):
    old = bundle_export(study=withdrawn)
    old["format_version"] = 5
    for section in ("withdrawals", "consent_versions", "consent_acceptances"):
        del old[section]
    report = bundle_import(data=bundles.dumps(old), slug="s1-v5", grant_existing=True)
    again = bundle_export(study=report.study)
    assert again["format_version"] == bundles.FORMAT_VERSION == 6
    assert (again["withdrawals"], again["consent_versions"], again["consent_acceptances"]) == ([], [], [])
    assert len(again["annotations"]) == len(old["annotations"])


def test_withdrawals_and_acceptances_naming_people_or_versions_not_in_the_bundle_are_refused(withdrawn):
    bundle = bundle_export(study=withdrawn)
    bundle["withdrawals"][0]["user"] = "ghost"
    bundle["consent_acceptances"][0]["user"] = "nobody"
    bundle["consent_acceptances"].append({**bundle["consent_acceptances"][0], "user": bundle["users"][0],
                                          "number": 9})
    bundle["consent_versions"].append({**bundle["consent_versions"][1]})
    bundle["withdrawals"].append({**bundle["withdrawals"][0], "user": bundle["users"][0], "erase_requested": False,
                                  "erased_at": "2026-01-31T12:00:00.000000Z", "released": -1})
    with pytest.raises(ImportRefused) as refused:
        bundle_import(data=bundles.dumps(bundle), slug="s1-bad", grant_existing=True)
    text = str(refused.value)
    assert "withdrawals[0]: user 'ghost' is not in \"users\"" in text
    assert "consent_acceptances[0]: user 'nobody' is not in \"users\"" in text
    assert 'consent_acceptances[1]: consent version 9 is not in "consent_versions"' in text
    assert "consent_versions[2]: consent version 2 is listed twice" in text
    assert "withdrawals[1]: 'released' is -1, out of range" in text
    bundle["withdrawals"][1]["released"] = 0
    assert "withdrawals[1].erased_at: set, but 'erase_requested' is false" in "\n".join(bundles.check(bundle))
    assert not Study.objects.filter(slug="s1-bad").exists()


@pytest.mark.parametrize("moves", [["closed"], ["closed", "archived"]])
def test_a_closed_or_archived_study_comes_back_with_its_withdrawals_and_consent(withdrawn, moves):
    for move in moves:
        Study.objects.filter(pk=withdrawn.pk).update(state=move)
    withdrawn.refresh_from_db()
    bundle = bundle_export(study=withdrawn)
    report = bundle_import(data=bundles.dumps(bundle), slug="s1-closed", grant_existing=True)
    assert Study.objects.get(pk=report.study.pk).state == moves[-1]
    _same_bundle_as(report.study, bundle)

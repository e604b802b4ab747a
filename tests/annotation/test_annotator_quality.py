"""The annotator quality table and the work log, through the API, the pages and the CSV.

The world: six clips, one caption each, double-annotated by `annotator` and `second`; a QC
reviewer approves three of annotator's items, amends one, returns one, and approves and undoes
the sixth. The expected numbers are worked out by hand beside each assertion.
"""

from __future__ import annotations

import csv
import io
import statistics

import pytest
from django.test import Client

from annotation.models import Annotation, AuditEvent, GoldItem, Membership, Qualification
from annotation.rules.pseudonyms import pseudonym
from annotation.selectors.annotator_quality import gold_drift
from annotation.selectors.work_log import people_of
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    annotations_assign,
    decision_undo,
    review_amend,
    review_approve,
    review_claim,
    review_return,
)
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip
from tests.conftest import in_setup

pytestmark = pytest.mark.django_db

CLIPS = [f"c{i}" for i in range(6)]
REJECT = {"verdict": "reject", "text": "A test card with a counter.", "modes": ["factual"]}
ACCEPT = {"verdict": "accept"}
# Overview verdicts: annotator rejects c0-c3 and accepts c4, c5; second rejects c0-c2 and accepts
# c3-c5. Agreement counts captions both have submitted (submitted, in review, approved): c4 is
# returned to annotator, so c0, c1, c2, c3, c5. They agree on c0, c1, c2 (reject) and c5
# (accept): 4 of 5. Marginals: annotator 4 reject / 1 accept, second 3 / 2:
# p_e = (4*3 + 1*2) / 25 = 14/25, kappa = (4/5 - 14/25) / (1 - 14/25) = (6/25) / (11/25) = 6/11.
ANNOTATOR_REJECTS = {"c0", "c1", "c2", "c3"}
SECOND_REJECTS = {"c0", "c1", "c2"}


@pytest.fixture
def world(study, personas, make_user, settings):
    second = make_user("second")
    membership_grant(study=study, user=second, role="annotator")
    for name in CLIPS:
        fake_clip(study, name)
    captions_add(study, [caption_record(name) for name in CLIPS])
    with in_setup(study):
        annotations_assign(study=study, annotators=[personas["annotator"], second], overlap_share=1.0)
    mine = {}
    for name in CLIPS:
        for person, rejects in ((personas["annotator"], ANNOTATOR_REJECTS), (second, SECOND_REJECTS)):
            annotation = Annotation.objects.get(annotator=person, caption__clip__name=name)
            done = complete(annotation, person, overview=REJECT if name in rejects else ACCEPT,
                            active_seconds=20)
            if person == personas["annotator"]:
                mine[name] = done
    reviewer = personas["reviewer"]
    for name in ("c0", "c1", "c2"):
        review_claim(annotation_id=mine[name].pk, actor=reviewer)
        review_approve(annotation_id=mine[name].pk, actor=reviewer)
    review_claim(annotation_id=mine["c3"].pk, actor=reviewer)
    # One word added ("red"): the amendment's size is 1 word.
    review_amend(annotation_id=mine["c3"].pk, actor=reviewer,
                 changes={"overview": {"text": "A test card with a red counter."}})
    review_claim(annotation_id=mine["c4"].pk, actor=reviewer)
    review_return(annotation_id=mine["c4"].pk, actor=reviewer,
                  units=[{"unit": "overview", "comment": "Look at the counter again."}])
    settings.UNDO_SECONDS = 60
    review_claim(annotation_id=mine["c5"].pk, actor=reviewer)
    review_approve(annotation_id=mine["c5"].pk, actor=reviewer)
    decision_undo(annotation_id=mine["c5"].pk, actor=reviewer)
    return {"study": study, "personas": {**personas, "second": second}, "mine": mine}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def rows_by_person(answer) -> dict[str, dict]:
    return {row["person"]: row for row in answer["annotators"]}


def test_the_quality_table_counts_qc_outcomes_time_and_agreement_by_hand(world):
    answer = client_of(world["personas"]["admin"]).get("/api/studies/s1/annotator-quality/").json()
    assert answer["minimum_items"] == 5
    rows = rows_by_person(answer)
    assert set(rows) == {"annotator", "second"}
    mine, second = rows["annotator"], rows["second"]
    assert mine["items_done"] == second["items_done"] == 6
    # Decisions that stand: approve c0, c1, c2; amend c3; return c4 (c5's approval was undone): 5.
    assert (mine["approved"], mine["amended"], mine["returned"]) == (3, 1, 1)
    assert (mine["approved_rate"], mine["amended_rate"], mine["return_rate"]) == (
        pytest.approx(3 / 5), pytest.approx(1 / 5), pytest.approx(1 / 5))
    assert mine["amendment_words"] == pytest.approx(1.0)
    # Five items double-annotated (c4 is back with annotator): agreement 4/5, kappa 6/11 (see the top).
    assert (mine["double_items"], second["double_items"]) == (5, 5)
    for row in (mine, second):
        assert row["peer_agreement"] == pytest.approx(4 / 5)
        assert row["peer_kappa"] == pytest.approx(6 / 11)
    stored = Annotation.objects.filter(annotator__username="annotator").values_list("active_seconds", flat=True)
    assert mine["active_seconds"] == pytest.approx(statistics.median(stored)) and mine["active_seconds"] > 0
    # Nobody reviewed second's work: no rates, and the note says what they need.
    assert second["approved_rate"] is None and second["amendment_words"] is None
    assert "QC rates need 5 decisions (0 so far)" in second["notes"]
    assert mine["notes"] == "gold agreement not computed: 0 items, needs at least 5"


def test_researchers_see_pseudonyms_admins_names(world):
    study, people = world["study"], world["personas"]
    answer = client_of(people["researcher"]).get("/api/studies/s1/annotator-quality/").json()
    expected = {pseudonym(study.release_secret, people[name].pk) for name in ("annotator", "second")}
    assert set(rows_by_person(answer)) == expected
    log = client_of(people["researcher"]).get("/api/studies/s1/work-log/").json()
    persons = {entry["person"] for entry in log["entries"]} | {entry["annotator"] for entry in log["entries"]}
    assert persons and all(p.startswith("person-") or p in ("", "(the system)") for p in persons)
    assert not {"annotator", "second", "reviewer", "admin"} & persons
    # The researcher filters by the pseudonym they see.
    reviewer = pseudonym(study.release_secret, people["reviewer"].pk)
    theirs = client_of(people["researcher"]).get("/api/studies/s1/work-log/", {"person": reviewer}).json()
    assert theirs["entries"] and {e["person"] for e in theirs["entries"]} == {reviewer}


def test_the_work_log_lists_workflow_actions_newest_first_and_filters(world):
    admin = client_of(world["personas"]["admin"])
    entries = admin.get("/api/studies/s1/work-log/", {"limit": 500}).json()["entries"]
    ids = [entry["id"] for entry in entries]
    assert ids == sorted(ids, reverse=True)
    expected = AuditEvent.objects.filter(
        study=world["study"], action__in=("open", "lock_overview", "submit", "claim", "approve", "amend",
                                          "return", "undo", "release")).count() + 1  # + the assignment
    assert len(entries) == expected
    assert entries[-1]["action"] == "assign" and entries[-1]["clip"] == ""
    assert "save" not in {entry["action"] for entry in entries}
    undo = entries[0]
    assert (undo["action"], undo["person"], undo["clip"], undo["annotator"]) == ("undo", "reviewer", "c5", "annotator")
    assert undo["summary"] == "Undid the approved as is (approve)."
    assert undo["model"] == SECRET_MODEL  # the admin sees the model's name

    reviewer = admin.get("/api/studies/s1/work-log/", {"person": "reviewer", "limit": 500}).json()["entries"]
    # 6 claims, 4 approvals, 1 amendment, 1 return, 1 undo.
    assert len(reviewer) == 13 and {e["person"] for e in reviewer} == {"reviewer"}
    c3 = admin.get("/api/studies/s1/work-log/", {"clip": "c3", "limit": 500}).json()["entries"]
    assert {e["clip"] for e in c3} == {"c3"} and "amend" in {e["action"] for e in c3}
    returns = admin.get("/api/studies/s1/work-log/", {"action": "return"}).json()["entries"]
    assert [(e["clip"], e["annotator"]) for e in returns] == [("c4", "annotator")]
    # The reviewer's comment (their own words) is not in the log's sentence.
    assert returns[0]["summary"] == "Returned to the annotator (1 unit(s) to look at again)."


def test_the_work_log_pages_by_its_cursor_without_gaps(world):
    admin = client_of(world["personas"]["admin"])
    everything = [e["id"] for e in admin.get("/api/studies/s1/work-log/", {"limit": 500}).json()["entries"]]
    seen, before = [], None
    while True:
        page = admin.get("/api/studies/s1/work-log/", {"limit": 7, **({"before": before} if before else {})}).json()
        seen += [e["id"] for e in page["entries"]]
        before = page["next"]
        if before is None:
            break
    assert seen == everything


@pytest.mark.parametrize(("params", "field"), [
    ({"action": "save"}, "action"), ({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"),
    ({"before": "soon"}, "before"), ({"before": "-3"}, "before"),
])
def test_bad_work_log_parameters_get_a_400_naming_the_field(world, params, field):
    response = client_of(world["personas"]["admin"]).get("/api/studies/s1/work-log/", params)
    assert response.status_code == 400
    body = response.json()
    assert field in body and body["detail"] == f"{field}: {body[field][0]}"


def test_an_admin_who_also_annotates_sees_aliases_in_the_work_log(world):
    admin = world["personas"]["admin"]
    membership_grant(study=world["study"], user=admin, role="annotator")
    body = client_of(admin).get("/api/studies/s1/work-log/", {"limit": 500}).content.decode()
    assert SECRET_MODEL not in body
    alias = world["study"].candidate_models.get(name=SECRET_MODEL).alias
    assert f'"model":"{alias}"' in body


def test_annotators_and_reviewers_are_refused_the_quality_table_and_the_log(world):
    for persona in ("annotator", "reviewer"):
        client = client_of(world["personas"][persona])
        for url in ("/api/studies/s1/annotator-quality/", "/api/studies/s1/work-log/",
                    "/studies/s1/annotator-quality/", "/studies/s1/work-log/", "/studies/s1/annotator-quality.csv"):
            assert client.get(url).status_code == 403, (persona, url)


def test_the_csv_has_the_tables_columns_and_quotes_formulas(world, make_user):
    membership_grant(study=world["study"], user=make_user("+cmd"), role="annotator")
    response = client_of(world["personas"]["admin"]).get("/studies/s1/annotator-quality.csv?sort=items_done&order=desc")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["person"] for row in rows] == ["annotator", "second", "'+cmd"]
    assert (rows[0]["approved"], rows[0]["approved_rate"], rows[0]["items_done"]) == ("3", "0.6", "6")
    assert rows[2]["items_done"] == "0" and rows[2]["peer_kappa"] == ""


def test_the_quality_page_sorts_by_a_column_blank_cells_last(world, make_user):
    membership_grant(study=world["study"], user=make_user("zed"), role="annotator")
    admin = client_of(world["personas"]["admin"])
    page = admin.get("/studies/s1/annotator-quality/?sort=return_rate&order=desc").content.decode()
    # annotator has a return rate (20 %), second and zed none: annotator first, then by name.
    order = [page.index(f'data-person="{name}"') for name in ("annotator", "second", "zed")]
    assert order == sorted(order)
    assert 'aria-sort="descending"' in page
    page = admin.get("/studies/s1/annotator-quality/?sort=person&order=desc").content.decode()
    order = [page.index(f'data-person="{name}"') for name in ("zed", "second", "annotator")]
    assert order == sorted(order)


def test_the_quality_table_costs_the_same_queries_for_more_annotators(world, make_user, django_assert_max_num_queries):
    admin = client_of(world["personas"]["admin"])
    admin.get("/api/studies/s1/annotator-quality/")  # the session, once
    with django_assert_max_num_queries(14) as few:
        admin.get("/api/studies/s1/annotator-quality/")
    for i in range(5):
        membership_grant(study=world["study"], user=make_user(f"extra{i}"), role="annotator")
    with django_assert_max_num_queries(len(few.captured_queries)):
        admin.get("/api/studies/s1/annotator-quality/")


# --------------------------------------------------------------------------- gold

GOLD_REJECT = REJECT  # "A test card with a counter." against the model's "... counter that counts up."
GOLD = {"g0": GOLD_REJECT, "g1": GOLD_REJECT, "g2": GOLD_REJECT, "g3": ACCEPT, "g4": ACCEPT}
MINE = {"g0": GOLD_REJECT, "g1": GOLD_REJECT, "g2": ACCEPT, "g3": ACCEPT,
        "g4": {"verdict": "reject", "text": "A test card.", "modes": ["factual"]}}


@pytest.fixture
def gold_world(world, make_user):
    """Five gold items made by an expert, each met by annotator as a hidden gold check (both
    sides with complete()'s windows: window 1 rejected with mode temporal, the others accepted)."""
    study = world["study"]
    expert = make_user("expert")
    membership_grant(study=study, user=expert, role="expert")
    # Until the gold services let an expert work, the workflow's services need an annotator.
    membership_grant(study=study, user=expert, role="annotator")
    for name in GOLD:
        fake_clip(study, name)
    captions_add(study, [caption_record(name) for name in GOLD])
    for name in GOLD:
        caption = study.clips.get(name=name).captions.get()
        gold = Annotation.objects.create(caption=caption, annotator=expert, taxonomy=study.taxonomy, purpose="gold")
        gold = complete(gold, expert, overview=GOLD[name])
        GoldItem.objects.create(study=study, caption=caption, gold=gold, made_by=expert)
        check = Annotation.objects.create(caption=caption, annotator=world["personas"]["annotator"],
                                          taxonomy=study.taxonomy, purpose="gold_check")
        complete(check, world["personas"]["annotator"], overview=MINE[name])
    Membership.objects.filter(study=study, user=expert, role="annotator").delete()
    Qualification.objects.create(study=study, user=world["personas"]["annotator"], state="passed", attempts=2,
                                 attempts_allowed=2, result={"overview_agreement": 0.8})
    return {**world, "expert": expert}


def test_gold_agreement_of_the_gold_checks_by_hand(gold_world):
    rows = rows_by_person(client_of(gold_world["personas"]["admin"]).get("/api/studies/s1/annotator-quality/").json())
    # The expert's gold verdicts are no one's work: no row of their own.
    assert set(rows) == {"annotator", "second"}
    mine = rows["annotator"]
    assert (mine["items_done"], mine["gold_checks"]) == (6, 5)
    assert (mine["practice"], mine["practice_attempts"], mine["practice_overview_agreement"]) == ("passed", 2, 0.8)
    # Overview (gold, annotator): g0 R R, g1 R R, g2 R A, g3 A A, g4 A R: p_o = 3/5.
    # Marginals 3 R / 2 A on both sides: p_e = (3*3 + 2*2) / 25 = 13/25; kappa = (2/25) / (12/25) = 1/6.
    assert mine["gold_overview_agreement"] == pytest.approx(3 / 5)
    assert mine["gold_overview_kappa"] == pytest.approx(1 / 6)
    # Modes: overview "factual" on g0, g1 both (TP 2), g2 gold only (FN 1), g4 annotator only (FP 1);
    # window 1 "temporal" on all five both sides (TP 5). F1 = 2*7 / (2*7 + 1 + 1) = 14/16.
    assert mine["gold_mode_f1"] == pytest.approx(14 / 16)
    assert mine["gold_window_agreement"] == pytest.approx(1.0)
    # Words between the corrected overviews. Model: "A test card with a counter that counts up." (9
    # words); gold reject: "A test card with a counter." (6; 4 changed from the model's); annotator's
    # g4: "A test card." (3; 7 changed). g0, g1: 0; g2: model vs gold reject 4; g3: 0; g4: annotator's
    # vs the model's (gold accepted) 7: 11/5.
    assert mine["gold_words_from_gold"] == pytest.approx(11 / 5)
    # Edit sizes against the model: annotator 4 + 4 + 0 + 0 + 7 = 15, gold 4 + 4 + 4 + 0 + 0 = 12: 3/5.
    assert mine["gold_size_difference"] == pytest.approx(3 / 5)
    # All five checks are recent: 3 of 5 overview verdicts right.
    assert mine["recent_gold_accuracy"] == pytest.approx(3 / 5)
    assert "gold agreement" not in mine["notes"]
    assert rows["second"]["gold_overview_kappa"] is None and rows["second"]["practice"] == ""


def test_the_dashboard_warns_of_drift_below_the_studys_threshold(gold_world):
    study = gold_world["study"]
    assert study.gold_drift_threshold == 0.7
    drifting = gold_drift(study=study, people=people_of(study, by_name=True))
    assert drifting == [{"person": "annotator", "recent": pytest.approx(0.6), "checks": 5}]
    page = client_of(gold_world["personas"]["admin"]).get("/studies/s1/").content.decode()
    assert 'id="gold-drift"' in page and "annotator" in page and "60%" in page
    type(study).objects.filter(pk=study.pk).update(gold_drift_threshold=0.6)
    study.refresh_from_db()
    assert gold_drift(study=study, people=people_of(study, by_name=True)) == []
    page = client_of(gold_world["personas"]["admin"]).get("/studies/s1/").content.decode()
    assert 'id="gold-drift"' not in page


# --------------------------------------------------------------------------- the profile's sensitivity


def test_the_profile_leaves_out_annotators_below_the_gold_threshold_in_its_sensitivity_table(gold_world, tmp_path):
    import json

    from scoring.profiles import export_files, profile_export

    study, people = gold_world["study"], gold_world["personas"]
    # second's c4 and c5 approved: the final verdicts are annotator's c0-c3 and second's c4, c5.
    second = {a.caption.clip.name: a for a in Annotation.objects.filter(annotator=people["second"])}
    for name in ("c4", "c5"):
        review_claim(annotation_id=second[name].pk, actor=people["reviewer"])
        review_approve(annotation_id=second[name].pk, actor=people["reviewer"])
    manifest = profile_export(study=study, out_dir=tmp_path, resamples=50, adjusted_resamples=10)
    # annotator agrees with the gold verdicts on 3 of 5 items (60 %), below the threshold (70 %).
    below = pseudonym(study.release_secret, people["annotator"].pk)
    assert manifest["parameters"]["annotators below it (left out of its 'without' columns)"] == below
    entry = next(t for t in manifest["tables"] if t["name"] == "annotator_sensitivity")
    table = json.loads((tmp_path / entry["json"]).read_text())
    rows = {row["row"]: row for row in table["rows"]}
    length = rows["score_length"]
    # Six captions with everyone; second's two without annotator's four.
    assert (length["everyone_n"], length["without_n"]) == (6, 2)
    # factual on the final overview: annotator rejected c0-c3 with it (the QC amendment of c3
    # kept it); second accepted c4 and c5: 4/6 with everyone, 0/2 without.
    factual = rows["factual (overview)"]
    assert factual["everyone"] == pytest.approx(100 * 4 / 6) and factual["without"] == 0.0
    assert (tmp_path / entry["csv"]).exists()
    assert entry["csv"] in export_files(manifest)  # in the zip too


def test_the_profile_page_shows_the_sensitivity_table_of_a_finished_export(gold_world):
    import json

    from scoring import profile_jobs, profiles

    study = gold_world["study"]
    status = profile_jobs.profile_job_create(study=study, requested_by="researcher", resamples=20,
                                             adjusted_resamples=10)
    folder = profile_jobs.job_dir(study, status["job"])
    manifest = profiles.profile_export(study=study, out_dir=folder / "files", resamples=20, adjusted_resamples=10)
    (folder / "profile.zip").write_bytes(b"PK")
    status.update(state=profile_jobs.DONE, manifest=manifest, files=profiles.export_files(manifest), zip="profile.zip",
                  finished_at="2026-01-01T00:00:00+00:00")
    (folder / "status.json").write_text(json.dumps(status))
    data = client_of(gold_world["personas"]["researcher"]).get(f"/studies/s1/profiles/jobs/{status['job']}/").json()
    table = data["annotator_sensitivity"]
    assert table["name"] == "annotator_sensitivity" and table["caption"].startswith("Sensitivity to the annotators")
    assert {"Table 1", "Table 3"} == {row["table"] for row in table["rows"]}


def test_no_gold_checks_no_sensitivity_table(world, tmp_path):
    from scoring.profiles import profile_export

    manifest = profile_export(study=world["study"], out_dir=tmp_path, resamples=50, adjusted_resamples=10)
    assert "annotator_sensitivity" not in {t["name"] for t in manifest["tables"]}


def test_the_release_card_summarises_annotator_quality_by_pseudonym(gold_world, tmp_path):
    import yaml

    from scoring.release import release_build

    study, people = gold_world["study"], gold_world["personas"]
    release_build(study=study, out_dir=tmp_path, license="CC-BY-4.0")
    card = (tmp_path / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    # Two annotators released work (6 items each submitted); annotator passed the practice set,
    # five gold checks, annotator's gold agreement computed (second has none).
    assert header["redline"]["annotator_quality"] == {
        "annotators": 2, "qualified": 1, "gold_checks": 5, "annotators_with_gold_agreement": 1, "minimum_items": 5}
    assert "## Annotator quality" in card
    mine = pseudonym(study.release_secret, people["annotator"].pk)
    line = next(line for line in card.splitlines() if line.startswith(f"| `{mine}`"))
    # items, practice, gold checks, gold overview agreement 60 %, kappa 1/6, F1 14/16, windows
    # 100 %, QC returned 1 of 5 decisions, kappa with others 6/11.
    assert line == f"| `{mine}` | 6 | passed | 5 | 60 % | 0.17 | 0.88 | 100 % | 20 % | 0.55 |"
    section = card.split("## Annotator quality")[1].split("## Failure taxonomy")[0]
    for name in ("annotator", "second", "reviewer", "expert"):
        assert f"`{name}`" not in section

"""The data release: Parquet and JSON Lines read back and checked against the database, the
dataset card's YAML header, pseudonyms instead of account names, no secret, nothing escaped."""

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest
import yaml
from django.core.management import call_command

from annotation.models import Annotation, CorrectionPass, Window
from annotation.services.studies import membership_grant
from annotation.services.workflow import (
    annotations_assign,
    review_amend,
    review_approve,
    review_claim,
)
from scoring.release import ReleaseError, pseudonym, release_build
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

UNTRUSTED = 'A <script>alert("x")</script> & a "quoted" card, 1 < 2'


@pytest.fixture
def people(study, personas, make_user):
    """An annotator and a reviewer whose account names appear nowhere else in a release."""
    annotator, reviewer = make_user("ann-smithfield"), make_user("rev-joneswick")
    membership_grant(study=study, user=annotator, role="annotator")
    membership_grant(study=study, user=reviewer, role="reviewer")
    return annotator, reviewer


@pytest.fixture
def released(study, people):
    """c1/Alpha: overview rejected (with untrusted text), window 1 retimed; approved.
    c2/Bravo: accepted by the annotator, QC amends window 2's scene; c3/Alpha never reviewed."""
    annotator, reviewer = people
    for name in ("c1", "c2", "c3"):
        fake_clip(study, name)
    captions_add(study, [caption_record("c1", "Alpha"), caption_record("c2", "Bravo"),
                         caption_record("c3", "Alpha")])
    annotations_assign(study=study, annotators=[annotator])

    def item(clip):
        return Annotation.objects.get(caption__clip__name=clip)

    complete(item("c1"), annotator, overview={"verdict": "reject", "text": UNTRUSTED, "modes": ["factual"]})
    review_claim(annotation_id=item("c1").pk, actor=reviewer)
    review_approve(annotation_id=item("c1").pk, actor=reviewer)
    accept_all = [{"index": i, "verdict": "accept"} for i in range(3)]
    complete(item("c2"), annotator, overview={"verdict": "accept"}, windows=accept_all)
    review_claim(annotation_id=item("c2").pk, actor=reviewer)
    review_amend(annotation_id=item("c2").pk, actor=reviewer, changes={"windows": [
        {"index": 2, "verdict": "reject", "scene": "The counter stops at four.", "modes": ["factual"]}]})
    complete(item("c3"), annotator)
    return study


def build(study, tmp_path, name="out", **options):
    out = tmp_path / name
    report = release_build(study=study, out_dir=out, license=options.pop("license", "CC-BY-4.0"), **options)
    return out, report


def test_the_parquet_files_hold_the_final_verdicts_of_the_database(released, tmp_path, people):
    out, report = build(released, tmp_path)
    captions = pq.read_table(out / "captions.parquet").to_pylist()
    windows = pq.read_table(out / "windows.parquet").to_pylist()
    assert report["counts"] == {"captions": 2, "windows": 6, "clips": 2, "models": 2, "excluded_by_withdrawal": 0}
    assert [(row["clip"], row["model"]) for row in captions] == [("c1", "Model A"), ("c2", "Model B")]
    for row in captions:
        annotation = Annotation.objects.get(caption__clip__name=row["clip"], state="approved")
        caption = annotation.caption
        final = annotation.passes.get(kind="qc" if row["reviewer_decision"] == "amended" else "annotator")
        assert row["original_overview"] == caption.overview
        rejected = final.overview_verdict == CorrectionPass.Verdict.REJECT
        assert row["final_overview"] == (final.overview_text if rejected else caption.overview)
        assert row["overview_verdict"] == final.overview_verdict
        assert row["overview_modes"] == list(final.overview_modes)
        originals = list(Window.objects.filter(caption=caption).order_by("index"))
        assert [(w["start"], w["end"], w["scene"], w["shot"]) for w in row["original_windows"]] == [
            (w.start, w.end, w.scene, w.shot) for w in originals]
    c1, c2 = captions
    assert c1["final_overview"] == UNTRUSTED and c1["overview_words_changed"] > 0
    assert c1["reviewer_decision"] == "approved" and c2["reviewer_decision"] == "amended"
    assert c1["windows_rejected"] == 1 and c1["final_windows"][1]["end"] == 3.5
    assert c2["overview_words_changed"] == 0 and c2["overview_char_similarity"] == 1.0
    c2_window = next(w for w in windows if w["clip"] == "c2" and w["window_index"] == 2)
    assert (c2_window["verdict"], c2_window["modes"], c2_window["final_scene"]) == (
        "reject", ["factual"], "The counter stops at four.")
    assert c2_window["original_scene"] == "The counter reaches five." and c2_window["words_changed"] > 0
    retimed = next(w for w in windows if w["clip"] == "c1" and w["window_index"] == 1)
    assert (retimed["original_end"], retimed["final_end"], retimed["modes"]) == (4.0, 3.5, ["temporal"])


def test_the_jsonl_files_hold_the_same_rows(released, tmp_path):
    out, _ = build(released, tmp_path)
    for table in ("captions", "windows"):
        lines = (out / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == pq.read_table(out / f"{table}.parquet").to_pylist()


def test_models_can_be_released_by_name(released, tmp_path):
    out, _ = build(released, tmp_path, models="name")
    assert [row["model"] for row in pq.read_table(out / "captions.parquet").to_pylist()] == ["Alpha", "Bravo"]
    with pytest.raises(ReleaseError, match="models must be alias or name"):
        build(released, tmp_path, "again", models="secret")


def test_the_card_has_a_yaml_header_with_license_counts_taxonomy_and_thresholds(released, tmp_path):
    out, _ = build(released, tmp_path, license="CC-BY-NC-4.0")
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n")
    header = yaml.safe_load(card.split("---\n")[1])
    released.taxonomy.refresh_from_db()
    assert header["license"] == "cc-by-nc-4.0"
    assert header["redline"]["counts"] == {"captions": 2, "windows": 6, "clips": 2, "models": 2,
                                           "excluded_by_withdrawal": 0}
    assert header["redline"]["taxonomy"]["sha256"] == released.taxonomy.content_hash != ""
    assert header["redline"]["thresholds"] == {"word_thresholds": [1, 3, 6, 16], "near_total_cut": 0.55,
                                               "length_band": 0.05}
    assert {c["config_name"]: c["data_files"] for c in header["configs"]} == {
        "captions": "captions.parquet", "windows": "windows.parquet"}
    body = card.split("---\n", 2)[2]
    for mode in released.taxonomy.modes.all():
        assert mode.definition in body
    for field in ("final_overview", "reviewer_decision", "window_index", "words_changed"):
        assert f"`{field}`" in body
    with pytest.raises(ReleaseError, match="license must be one of"):
        build(released, tmp_path, "bad", license="mine")


def test_people_are_stable_pseudonyms_never_account_names_and_the_secret_is_not_released(
        released, tmp_path, people):
    annotator, reviewer = people
    first, _ = build(released, tmp_path, "first")
    second, _ = build(released, tmp_path, "second")
    rows = pq.read_table(first / "captions.parquet").to_pylist()
    assert {row["annotator"] for row in rows} == {pseudonym(released.release_secret, annotator.pk)}
    assert {row["reviewer"] for row in rows} == {pseudonym(released.release_secret, reviewer.pk)}
    assert rows[0]["annotator"].startswith("person-") and rows[0]["annotator"] != rows[0]["reviewer"]
    assert pq.read_table(second / "captions.parquet").to_pylist() == rows
    for path in first.iterdir():
        data = path.read_bytes()
        for secret in (released.release_secret, "ann-smithfield", "rev-joneswick"):
            assert secret.encode() not in data, (path.name, secret)


def test_another_study_gives_the_same_person_another_pseudonym(released, other_study, people):
    annotator, _ = people
    assert released.release_secret != other_study.release_secret
    assert pseudonym(released.release_secret, annotator.pk) != pseudonym(other_study.release_secret, annotator.pk)


def test_release_files_escape_nothing(released, tmp_path):
    out, _ = build(released, tmp_path)
    for name in ("captions.jsonl", "windows.jsonl", "README.md"):
        text = (out / name).read_text(encoding="utf-8")
        assert "&lt;" not in text and "&amp;" not in text and "&quot;" not in text
    assert '<script>alert(\\"x\\")</script> & a \\"quoted\\" card, 1 < 2' in (out / "captions.jsonl").read_text()


def test_a_study_without_approved_verdicts_has_nothing_to_release(study, personas, tmp_path):
    with pytest.raises(ReleaseError, match="no approved verdict yet"):
        build(study, tmp_path)


def test_the_command_writes_the_release(released, tmp_path):
    output = io.StringIO()
    call_command("release_study", "--study", released.slug, "--out", str(tmp_path / "cli"), stdout=output)
    assert "Wrote 2 captions and 6 windows" in output.getvalue()
    assert pq.read_table(tmp_path / "cli" / "windows.parquet").num_rows == 6


def test_admins_and_researchers_download_the_release_others_do_not(released, personas, client):
    client.force_login(personas["researcher"])
    answer = client.get(f"/studies/{released.slug}/release.zip?license=CC0-1.0&models=name")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(answer.content)).namelist()
    assert sorted(names) == sorted(f"s1-release/{n}" for n in (
        "captions.parquet", "captions.jsonl", "windows.parquet", "windows.jsonl", "README.md"))
    client.force_login(personas["annotator"])
    assert client.get(f"/studies/{released.slug}/release.zip").status_code == 403
    client.force_login(personas["admin"])
    assert client.get(f"/studies/{released.slug}/release.zip?license=nope").status_code == 400

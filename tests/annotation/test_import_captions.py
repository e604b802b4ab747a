import dataclasses
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import CandidateModel, Caption, Window
from tests.conftest import jsonl

pytestmark = pytest.mark.django_db

GOOD = {
    "clip": "a",
    "model": "m1",
    "overview": "A test pattern with moving colours.",
    "windows": [
        {"start": 0, "end": 2, "scene": "Colours cycle.", "shot": "Static frame."},
        {"start": 2, "end": 4, "scene": "A counter runs.", "shot": "Static frame."},
    ],
    "meta": {"input_tokens_per_second": 120.5, "retried": True, "re_encoded": False},
}


def run_import(tmp_path, data: bytes, *flags):
    path = tmp_path / "captions.jsonl"
    path.write_bytes(data)
    out, err = StringIO(), StringIO()
    call_command("import_captions", "--study", "s1", str(path), *flags, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def state():
    return (Caption.objects.count(), Window.objects.count(), CandidateModel.objects.count())


def test_valid_file_stores_captions_windows_metadata_and_a_neutral_alias(clips, tmp_path):
    overview_only = {"clip": "b", "model": "m1", "overview": "Another pattern."}
    out, _ = run_import(tmp_path, jsonl(GOOD, overview_only))
    assert "Stored 2 caption(s)" in out
    caption = Caption.objects.get(clip__name="a")
    assert [w.end for w in caption.windows.all()] == [2, 4]
    assert (caption.input_tokens_per_second, caption.retried, caption.re_encoded) == (120.5, True, False)
    assert caption.model.alias == "Model A"
    assert Caption.objects.get(clip__name="b").windows.count() == 0


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"clip": "zzz"}, "unknown clip"),
        ({"overview": None}, "overview"),
        ({"windows": [{"start": "zero", "end": 2, "scene": "", "shot": ""}]}, "start"),
        ({"windows": [{"start": 3, "end": 2, "scene": "", "shot": ""}]}, "end"),
        ({"windows": [{"start": 0, "end": 9, "scene": "", "shot": ""}]}, "past the clip end"),
        ({"windows": [GOOD["windows"][1], GOOD["windows"][0]]}, "windows[1]"),
        ({"windows": [{"start": 0, "end": 3, "scene": "", "shot": ""},
                      {"start": 2, "end": 4, "scene": "", "shot": ""}]}, "overlap"),
        ({"colour": "red"}, "colour"),
        ({"overview": "x" * 60_000}, "limit"),
    ],
)
def test_bad_line_refuses_the_whole_file_and_names_line_and_field(clips, tmp_path, change, expected):
    bad = {**GOOD, "clip": "b", **change}
    before = state()
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, jsonl(GOOD, bad))
    assert "line 2" in str(error.value)
    assert expected in str(error.value)
    assert "nothing was stored" in str(error.value)
    assert state() == before


def test_duplicate_clip_and_model_in_one_file_names_both_lines(clips, tmp_path):
    with pytest.raises(CommandError, match="line 1") as error:
        run_import(tmp_path, jsonl(GOOD, GOOD))
    assert "line 2" in str(error.value)
    assert state() == (0, 0, 0)


def test_caption_already_stored_is_refused_as_a_duplicate(clips, tmp_path):
    run_import(tmp_path, jsonl(GOOD))
    with pytest.raises(CommandError, match="already"):
        run_import(tmp_path, jsonl(GOOD))
    assert Caption.objects.count() == 1


def test_invalid_utf8_is_reported_and_nothing_stored(clips, tmp_path):
    data = jsonl(GOOD) + b'\n{"clip": "b", "model": "m1", "overview": "caf\xe9"}'
    with pytest.raises(CommandError, match="UTF-8"):
        run_import(tmp_path, data)
    assert state() == (0, 0, 0)


def test_every_error_is_printed_not_only_the_first(clips, tmp_path):
    with pytest.raises(CommandError) as error:
        run_import(tmp_path, jsonl({**GOOD, "clip": "nope"}, {**GOOD, "clip": "b", "colour": 1}))
    assert "line 1" in str(error.value) and "line 2" in str(error.value)


def test_keep_invalid_stores_schema_invalid_captions_flagged_with_their_errors(clips, tmp_path):
    out, err = run_import(tmp_path, jsonl({**GOOD, "colour": "red"}), "--keep-invalid")
    caption = Caption.objects.get()
    assert caption.invalid_kept
    assert any("colour" in error for error in caption.validation_errors)
    assert "1 kept invalid" in out


def test_keep_invalid_still_refuses_what_cannot_be_stored(clips, tmp_path):
    impossible = {**GOOD, "clip": "b", "windows": [{"start": 5, "end": 1, "scene": "", "shot": ""}]}
    with pytest.raises(CommandError):
        run_import(tmp_path, jsonl({**GOOD, "colour": "red"}, impossible), "--keep-invalid")
    assert state() == (0, 0, 0)


def test_clip_cc_model_file_becomes_overview_only_captions(clips, tmp_path):
    path = tmp_path / "longva.json"
    path.write_text(json.dumps({"a": "First paragraph.", "b": "Second paragraph."}))
    call_command("import_captions", "--study", "s1", "--format", "clip-cc", str(path), stdout=StringIO())
    assert set(Caption.objects.values_list("model__name", flat=True)) == {"longva"}
    assert Window.objects.count() == 0


def test_a_folder_of_clip_cc_model_files_is_one_import_of_every_model(clips, tmp_path):
    (tmp_path / "longva.json").write_text(json.dumps({"a": "First paragraph.", "b": "Second."}))
    (tmp_path / "vila.json").write_text(json.dumps({"a": "Another paragraph."}))
    (tmp_path / "notes.txt").write_text("not a model file")
    out = StringIO()
    call_command("import_captions", "--study", "s1", "--format", "clip-cc", str(tmp_path), stdout=out)
    assert "Stored 3 caption(s)" in out.getvalue()
    assert sorted(Caption.objects.values_list("model__name", "clip__name")) == [
        ("longva", "a"), ("longva", "b"), ("vila", "a"),
    ]


def test_one_bad_model_file_in_a_folder_refuses_all_of_them_naming_it(clips, tmp_path):
    (tmp_path / "longva.json").write_text(json.dumps({"a": "First paragraph."}))
    (tmp_path / "vila.json").write_text(json.dumps({"a": "Fine.", "nosuchclip": "Orphan."}))
    with pytest.raises(CommandError) as refused:
        call_command("import_captions", "--study", "s1", "--format", "clip-cc", str(tmp_path),
                     stdout=StringIO())
    assert "vila: line 2" in str(refused.value) and "nosuchclip" in str(refused.value)
    assert "longva:" not in str(refused.value)
    assert state() == (0, 0, 0)


def test_an_empty_folder_is_refused_saying_so(clips, tmp_path):
    with pytest.raises(CommandError, match="no .json model files"):
        call_command("import_captions", "--study", "s1", "--format", "clip-cc", str(tmp_path),
                     stdout=StringIO())


def test_a_large_import_draws_a_progress_bar_batch_by_batch(clips, tmp_path, monkeypatch):
    from annotation.services import captions

    monkeypatch.setattr(captions, "IMPORT_BATCH", 2)
    records = [{**GOOD, "model": f"m{n}"} for n in range(5)]
    out, err = run_import(tmp_path, jsonl(*records))
    assert "Stored 5 caption(s)" in out
    assert [line.rsplit("]", 1)[1].strip() for line in err.split("\r") if "]" in line] == [
        "2/5 captions stored", "4/5 captions stored", "5/5 captions stored",
    ]
    assert state() == (5, 10, 5)


def test_captions_of_many_batches_keep_their_own_windows(clips, tmp_path, monkeypatch):
    from annotation.services import captions

    monkeypatch.setattr(captions, "IMPORT_BATCH", 3)
    records = [
        {**GOOD, "model": f"m{n}", "overview": f"Caption {n}.",
         "windows": GOOD["windows"][: 1 + n % 2]}
        for n in range(7)
    ]
    run_import(tmp_path, jsonl(*records))
    for caption in Caption.objects.select_related("model"):
        n = int(caption.model.name[1:])
        assert caption.overview == f"Caption {n}."
        assert caption.windows.count() == 1 + n % 2


# The two ways of storing (COPY on PostgreSQL, bulk_create elsewhere) and what they share.

AWKWARD = {
    "clip": "c",
    "model": "m1",
    "overview": 'Tabs\there, a new\nline, a back\\slash, "quotes", é and 🎬.',
    "windows": [
        {"start": 0, "end": 1.25, "scene": "\\N is not null.", "shot": "Close-up,\ttracking."},
        {"start": 1.25, "end": 6.4, "scene": "", "shot": "Wide."},
    ],
    "meta": {"input_tokens_per_second": 7, "retried": True, "route": "a/b\tc", "provider": "Ünï",
             "validation_errors": ["too long"]},
}


def stored_rows(study):
    captions = {
        (c["clip__name"], c["model__name"]): {
            k: v for k, v in c.items() if k not in ("id", "clip_id", "model_id", "created_at")
        }
        for c in Caption.objects.filter(clip__study=study).values("clip__name", "model__name", *[
            f.attname for f in Caption._meta.concrete_fields
        ])
    }
    windows = sorted(
        Window.objects.filter(caption__clip__study=study).values_list(
            "caption__clip__name", "caption__model__name", "index", "start", "end", "scene", "shot"
        )
    )
    return captions, windows


@pytest.mark.postgres
def test_copy_stores_the_same_rows_as_bulk_create(study, other_study, monkeypatch):
    from annotation.services import bulk
    from annotation.services.captions import captions_import_jsonl
    from tests.annotation.studybuild import fake_clip

    records = [
        AWKWARD,
        {**GOOD, "clip": "c", "model": "m2"},
        {"clip": "d", "model": "m1", "overview": "Overview only."},
        {**GOOD, "clip": "d", "model": "m2", "colour": "red"},  # kept invalid, with its error
    ]
    for target in (study, other_study):
        fake_clip(target, "c", duration=6.0)
        fake_clip(target, "d", duration=6.0)
    captions_import_jsonl(study=study, data=jsonl(*records), keep_invalid=True)
    monkeypatch.setattr(bulk, "copy_supported", lambda: False)
    captions_import_jsonl(study=other_study, data=jsonl(*records), keep_invalid=True)

    copied, created = stored_rows(study), stored_rows(other_study)
    assert copied == created
    assert copied[0][("c", "m1")]["overview"] == AWKWARD["overview"]
    assert copied[0][("c", "m1")]["meta"] == {"route": "a/b\tc", "provider": "Ünï", "validation_errors": ["too long"]}
    assert copied[0][("c", "m1")]["input_tokens_per_second"] == 7.0 and copied[0][("c", "m1")]["retried"]
    assert copied[0][("d", "m2")]["invalid_kept"] and copied[0][("d", "m2")]["validation_errors"]
    assert ("c", "m1", 0, 0.0, 1.25, "\\N is not null.", "Close-up,\ttracking.") in copied[1]


def test_a_row_the_database_refuses_in_a_later_batch_leaves_nothing_stored(clips, monkeypatch):
    """Validation should refuse it first; if the database still does (here a window past the
    clip end that skipped validation), the batches stored before it are undone too."""
    from django.db import IntegrityError

    from annotation.interchange import formats
    from annotation.services import captions

    monkeypatch.setattr(captions, "IMPORT_BATCH", 2)
    good = formats.parse_captions_jsonl(
        jsonl(*[{**GOOD, "model": f"m{n}"} for n in range(3)]), clip_durations={"a": 4.0}
    ).records
    past_the_end = dataclasses.replace(
        good[0], model="m9", windows=(formats.WindowRecord(start=0.0, end=9.0, scene="", shot=""),)
    )
    seen = []
    with pytest.raises(IntegrityError, match="past the clip end"):
        captions.captions_store(
            study=clips["a"].study,
            result=formats.ParseResult(records=(*good, past_the_end), errors=()),
            keep_invalid=False,
            progress=lambda stored, total: seen.append(stored),
        )
    assert seen == [2]  # the first batch was stored, then undone with the rest
    assert state() == (0, 0, 0)


def test_stored_pairs_are_read_one_model_at_a_time(clips, tmp_path, django_assert_num_queries):
    from annotation.services.captions import study_caption_pairs

    run_import(tmp_path, jsonl(GOOD, {**GOOD, "clip": "b"}, {**GOOD, "model": "m2"}))
    pairs = study_caption_pairs(clips["a"].study)
    with django_assert_num_queries(1):
        assert ("a", "m1") in pairs and ("b", "m1") in pairs
    with django_assert_num_queries(1):
        assert ("b", "m2") not in pairs and ("a", "m2") in pairs
    assert set(pairs) == {("a", "m1"), ("b", "m1"), ("a", "m2")} and len(pairs) == 3

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Reference
from tests.conftest import SHARED_DATASETS, jsonl

pytestmark = pytest.mark.django_db


def run(tmp_path, data: bytes, *flags, name="refs.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    out = StringIO()
    call_command("import_references", "--study", "s1", str(path), *flags, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_jsonl_references_are_stored_with_source_and_language(clips, tmp_path):
    out = run(tmp_path, jsonl(
        {"clip": "a", "text": "A colour test pattern.", "source": "expert", "language": "en"},
        {"clip": "b", "text": "Ein Testbild.", "source": "expert", "language": "de"},
    ))
    assert "Stored 2 reference(s)" in out
    assert Reference.objects.get(clip__name="b").language == "de"


def test_importing_the_same_references_again_stores_nothing_new(clips, tmp_path):
    data = jsonl({"clip": "a", "text": "A colour test pattern.", "source": "expert"})
    run(tmp_path, data)
    out = run(tmp_path, data)
    assert "Stored 0 reference(s); 1 already present" in out
    assert Reference.objects.count() == 1


def test_reference_for_an_unknown_clip_refuses_the_file(clips, tmp_path):
    with pytest.raises(CommandError, match="unknown clip"):
        run(tmp_path, jsonl({"clip": "a", "text": "ok"}, {"clip": "zzz", "text": "no such clip"}))
    assert Reference.objects.count() == 0


def test_clip_cc_references_are_read_with_their_leading_space_stripped(clips, tmp_path):
    data = json.dumps([
        {"id": "a", "file_link": "https://example.org/a", "summary": " The video begins.The man waves."},
    ]).encode()
    run(tmp_path, data, "--format", "clip-cc", name="clip_cc_dataset.json")
    reference = Reference.objects.get()
    assert reference.text.startswith("The video begins.")
    assert reference.source == "clip-cc-bench"


def test_fm_v2t_descriptions_csv_is_read_with_the_language_flag(clips, tmp_path):
    data = b'Video-Filename,German-Manual-Response-Correction\nb,"Das Video zeigt ein Testbild."\n'
    run(tmp_path, data, "--format", "fm-v2t", "--language", "de", name="desc.csv")
    reference = Reference.objects.get()
    assert (reference.clip.name, reference.language, reference.source) == ("b", "de", "fm-v2t")


@pytest.mark.skipif(not SHARED_DATASETS.exists(), reason="public datasets folder not present")
def test_all_clip_cc_bench_references_parse():
    from annotation.interchange import formats

    path = SHARED_DATASETS / "clip-cc-bench" / "data" / "ground_truth" / "clip_cc_dataset.json"
    records, errors = formats.parse_clip_cc_references(path.read_bytes())
    assert errors == [] and len(records) == 200

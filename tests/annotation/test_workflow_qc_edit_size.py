"""An amend records how much QC changed the annotator's version: the overview and each amended window."""

import pytest

from annotation.models import AuditEvent
from annotation.services.workflow import review_amend, review_claim
from scoring.metrics import edits
from tests.annotation.test_workflow import REJECTED_OVERVIEW, complete

pytestmark = pytest.mark.django_db


def amend(annotation, reviewer, changes):
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    review_amend(annotation_id=annotation.pk, actor=reviewer, changes=changes)
    return AuditEvent.objects.get(annotation=annotation, action="amend").after["edit_size"]


def test_amend_records_the_edit_size_from_annotator_to_qc(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    qc_text = "A test card; a counter counts to five."
    size = amend(annotation, personas["reviewer"], {
        "overview": {"text": qc_text},
        "windows": [{"index": 1, "scene": "The counter runs past three."}],
    })
    expected = edits.edit_size(REJECTED_OVERVIEW["text"], qc_text)
    assert size["overview"]["words_changed"] == expected.words_changed > 0
    assert size["overview"]["char_similarity"] == pytest.approx(expected.char_similarity, abs=1e-4)
    window = edits.edit_size("The counter runs. Static frame.", "The counter runs past three. Static frame.")
    assert size["windows"] == [{"index": 1, "words_changed": window.words_changed,
                                "char_similarity": round(window.char_similarity, 4), "near_total": False}]


def test_windows_qc_left_alone_are_not_recorded_and_an_accept_compares_with_the_original(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    size = amend(annotation, personas["reviewer"], {"overview": {"verdict": "accept"}})
    original = annotation.caption.overview
    assert size["overview"]["words_changed"] == edits.words_changed(REJECTED_OVERVIEW["text"], original)
    assert size["windows"] == []

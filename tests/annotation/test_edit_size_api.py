"""`POST /api/edit-size/` answers every pair of texts a member may send with numbers JSON can
carry: a text written from nothing has no relative length change, and says so with null."""

import math

import pytest
from rest_framework.test import APIClient

from scoring.metrics.edits import edit_size

pytestmark = pytest.mark.django_db


def post(user, original, corrected):
    client = APIClient()
    client.force_authenticate(user)
    client.raise_request_exception = False
    return client.post("/api/edit-size/", {"study": "s1", "original": original,
                                           "corrected": corrected}, format="json")


@pytest.mark.parametrize("original", ["", "   ", "\n\t"])
def test_a_text_written_from_nothing_answers_a_null_length_change_not_a_server_error(
        study, personas, original):
    assert math.isinf(edit_size(original, "A red car.").length_change)  # what the library says
    response = post(personas["annotator"], original, "A red car.")
    assert response.status_code == 200, response.content[:300]
    answer = response.json()
    assert answer["length_change"] is None
    assert (answer["direction"], answer["words_changed"]) == ("lengthened", 3)


def test_a_finite_length_change_is_answered_as_the_library_computes_it(study, personas):
    answer = post(personas["annotator"], "a red car", "a red car and a dog").json()
    assert answer["length_change"] == edit_size("a red car", "a red car and a dog").length_change
    assert answer["direction"] == "lengthened"

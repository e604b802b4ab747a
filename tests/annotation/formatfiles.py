"""What the format tests share: the fixture files and the clips they are written against, the
full public data sets (when this machine has them), and errors as the person importing reads them."""

from __future__ import annotations

import pytest

from annotation.interchange.formats import RecordError
from tests.conftest import REPO, SHARED_DATASETS

FIXTURES = REPO / "fixtures" / "formats"
DATASETS = SHARED_DATASETS

# The clips the caption fixtures are written against (see fixtures/formats/README.md).
CLIPS = {"001": 12.0, "002": 30.0, "003": 90.0}

needs_datasets = pytest.mark.skipif(
    not DATASETS.is_dir(), reason="the public data sets are not on this machine"
)
#: The clips of CLIP-CC-Bench: 200 clips of 90 seconds, named 001 to 200.
NINETY_SECOND_CLIPS = {f"{number:03d}": 90.0 for number in range(1, 201)}


def strings(errors: tuple[RecordError, ...] | list[RecordError]) -> list[str]:
    """The errors as the person importing reads them."""
    return [str(error) for error in errors]

"""docs/profile-tables.md lists every table and figure the profile writes."""

from __future__ import annotations

import re

from scoring.metrics.analysis.figures import FIGURES
from scoring.metrics.analysis.profile import TABLE_CAPTIONS
from tests.conftest import REPO

PAGE = (REPO / "docs" / "profile-tables.md").read_text(encoding="utf-8")


def listed(section: str) -> list[str]:
    """Return the backticked names in the first column of a section's table rows."""
    body = PAGE.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", body, flags=re.MULTILINE)


def test_every_table_is_documented_once_in_export_order() -> None:
    assert listed("Tables") == list(TABLE_CAPTIONS)


def test_every_figure_is_documented_once_in_export_order() -> None:
    assert listed("Figures") == list(FIGURES)

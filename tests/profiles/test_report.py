"""The HTML report: everything escaped, self-contained, the exact values beside the rounded ones."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from scoring.metrics.report import ReportFigure, cell_value, csv_text, display, render_report, render_table

PAYLOAD = '<img src=x onerror="alert(1)">'


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (np.int64(3), 3),
        (np.float64(0.25), 0.25),
        (float("nan"), None),
        (pd.NA, None),
        (None, None),
        (np.bool_(True), True),
        (math.inf, "inf"),
        ("text", "text"),
    ],
)
def test_cells_become_plain_json_values(value, plain):
    assert cell_value(value) == plain
    assert type(cell_value(value)) is type(plain)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (27.27272727, "27.27"),
        (0.000012, "1.20e-05"),
        (12345.6, "12,346"),
        (None, "–"),
        (True, "yes"),
        (0.0, "0"),
    ],
)
def test_numbers_are_shown_rounded(value, shown):
    assert display(value) == shown


def test_csv_text_writes_the_exact_value():
    assert csv_text(1 / 3) == repr(1 / 3) and csv_text(None) == "" and csv_text(False) == "false"


def test_every_text_is_escaped():
    table = pd.DataFrame({PAYLOAD: [PAYLOAD], "pct": [12.5]})
    html = render_report(
        title=PAYLOAD,
        tables={"t": table},
        captions={"t": PAYLOAD},
        figures=[ReportFigure(PAYLOAD, PAYLOAD, "t", b"\x89PNG")],
        parameters={PAYLOAD: PAYLOAD},
        notes=[PAYLOAD],
    )
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "<script" not in html and "http" not in html.replace('lang="en"', "")


def test_a_table_cell_carries_its_exact_value():
    html = render_table("t", pd.DataFrame({"model": ["A"], "pct": [100 / 3]}), "caption")
    assert f'data-value="{json.dumps(100 / 3)}">33.33</td>' in html


def test_a_table_needs_a_caption():
    with pytest.raises(ValueError, match="without a caption"):
        render_report(
            title="x", tables={"t": pd.DataFrame()}, captions={}, figures=[], parameters={}
        )


def test_an_empty_table_says_so():
    assert "No rows" in render_table("t", pd.DataFrame(columns=["a"]), "c")

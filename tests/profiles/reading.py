"""Reading an export back: the CSV, JSON and HTML of each table, parsed independently."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path


class ReportTables(HTMLParser):
    """Collect ``{table: [{column: (data-value, shown text)}]}`` and the figures' image sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, tuple[object, str]]]] = {}
        self.images: list[str] = []
        self.captions: dict[str, str] = {}
        self._table: str | None = None
        self._cell: tuple[str, object] | None = None
        self._text = ""
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section" and "data-table" in attributes:
            self._table = attributes["data-table"]
            self.tables[self._table] = []
        elif tag == "p" and attributes.get("class") == "caption" and self._table:
            self._in_caption, self._text = True, ""
        elif tag == "tr" and self._table is not None:
            self._row: dict[str, tuple[object, str]] = {}
        elif tag == "td" and "data-value" in attributes:
            self._cell = (attributes["data-column"], json.loads(attributes["data-value"]))
            self._text = ""
        elif tag == "img":
            self.images.append(attributes.get("src", ""))

    def handle_data(self, data):
        if self._cell is not None or self._in_caption:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            column, value = self._cell
            self._row[column] = (value, self._text)
            self._cell = None
        elif tag == "tr" and self._table is not None and getattr(self, "_row", None):
            self.tables[self._table].append(self._row)
            self._row = {}
        elif tag == "p" and self._in_caption:
            self.captions[self._table] = self._text
            self._in_caption = False
        elif tag == "section":
            self._table = None


def read_report(path: Path) -> ReportTables:
    parser = ReportTables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def same_number(text: str, value: object) -> bool:
    """Whether a CSV cell holds exactly the JSON value."""
    if value is None:
        return text == ""
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, int | float):
        return float(text) == value
    return text == value


def assert_numbers_agree(out: Path, name: str) -> list[dict]:
    """Assert the CSV, JSON and HTML of one table hold the same values; return the JSON rows."""
    from scoring.metrics.report import display

    document = json.loads((out / "tables" / f"{name}.json").read_text(encoding="utf-8"))
    rows = document["rows"]
    csv_rows = read_csv(out / "tables" / f"{name}.csv")
    html_rows = read_report(out / "report.html").tables[name]
    assert len(rows) == len(csv_rows) == len(html_rows), name
    for record, csv_row, html_row in zip(rows, csv_rows, html_rows, strict=True):
        assert list(csv_row) == document["columns"] == list(html_row), name
        for column, value in record.items():
            assert same_number(csv_row[column], value), (name, column, csv_row[column], value)
            exact, shown = html_row[column]
            assert exact == value, (name, column)
            assert shown == display(value), (name, column)
    return rows

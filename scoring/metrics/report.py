"""The failure profile as one self-contained HTML page, and the cell values every export shares.

Pure: pandas and the standard library, no Django. Every text that reaches the page (table
names, captions, column names, cells, model names, parameters) is HTML-escaped; figures are
inlined as base64 PNG ``data:`` URIs, and the page loads nothing from anywhere.

**One value, three files.** :func:`cell_value` turns a table cell into the plain value that the
JSON file stores; the CSV file writes the same value with :func:`csv_text`, and the HTML page
shows it rounded (:func:`display`) with the exact value in the cell's ``data-value`` attribute
(the JSON encoding of :func:`cell_value`), so the three agree by construction and a reader can
check it. Missing values (NaN, NA, None) are ``null`` / empty / an en dash; infinities are the
strings ``"inf"`` and ``"-inf"``.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np
import pandas as pd

Value = str | int | float | bool | None


def cell_value(value: Any) -> Value:
    """Return a table cell as a plain JSON-ready value (see the module docstring)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        return number
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        return ", ".join(str(item) for item in value)
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def table_records(table: pd.DataFrame) -> list[dict[str, Value]]:
    """Return the rows of ``table`` as ``{column: cell_value}`` dicts, in table order."""
    columns = [str(c) for c in table.columns]
    return [
        {column: cell_value(value) for column, value in zip(columns, row, strict=True)}
        for row in table.itertuples(index=False, name=None)
    ]


def csv_text(value: Value) -> str:
    """Return a plain cell value as CSV text (empty for missing; ``true``/``false``; ``repr``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def display(value: Value) -> str:
    """Return a plain cell value as shown on the page: numbers to 4 significant digits."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        if abs(value) < 1e-3:
            return f"{value:.2e}"
        text = f"{value:.4g}"
        return text
    if value in ("inf", "-inf"):
        return "∞" if value == "inf" else "−∞"
    return value


@dataclass(frozen=True)
class ReportFigure:
    """A figure of the report: its name, what it shows, the table it draws, its PNG bytes."""

    name: str
    caption: str
    table: str
    png: bytes


def _is_number(value: Value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def render_table(name: str, table: pd.DataFrame, caption: str) -> str:
    """Return one table as an HTML ``<section>``: heading, caption, header and rows."""
    columns = [str(c) for c in table.columns]
    head = "".join(f"<th scope=\"col\">{escape(c)}</th>" for c in columns)
    rows = []
    for record in table_records(table):
        cells = []
        for column in columns:
            value = record[column]
            exact = escape(json.dumps(value), quote=True)
            kind = " class=\"num\"" if _is_number(value) or value in ("inf", "-inf") else ""
            cells.append(f"<td{kind} data-column=\"{escape(column, quote=True)}\" "
                         f"data-value=\"{exact}\">{escape(display(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    reason = str(table.attrs.get("not_computable", ""))
    empty = (f"{reason[:1].upper()}{reason[1:]}." if reason
             else "No rows: the study has too little data for this table.")
    body = "".join(rows) if rows else (
        f"<tr><td colspan=\"{max(len(columns), 1)}\" class=\"empty\" "
        f"data-not-computable=\"{escape(reason, quote=True)}\">{escape(empty)}</td></tr>")
    anchor = escape(name, quote=True)
    return (
        f"<section class=\"table\" id=\"table-{anchor}\" data-table=\"{anchor}\">"
        f"<h2>{escape(name)}</h2><p class=\"caption\">{escape(caption)}</p>"
        f"<div class=\"scroll\"><table data-table=\"{anchor}\"><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
        f"<p class=\"files\">Files: <code>tables/{escape(name)}.csv</code>, "
        f"<code>tables/{escape(name)}.json</code></p></section>"
    )


def render_figure(figure: ReportFigure) -> str:
    """Return one figure as an HTML ``<figure>`` with the PNG inlined as a data URI."""
    data = base64.b64encode(figure.png).decode("ascii")
    anchor = escape(figure.name, quote=True)
    return (
        f"<figure id=\"figure-{anchor}\" data-figure=\"{anchor}\">"
        f"<img src=\"data:image/png;base64,{data}\" alt=\"{escape(figure.caption, quote=True)}\">"
        f"<figcaption><strong>{escape(figure.name)}</strong>. {escape(figure.caption)} "
        f"Data: <a href=\"#table-{escape(figure.table, quote=True)}\">{escape(figure.table)}</a>; "
        f"files <code>figures/{escape(figure.name)}.png</code>, "
        f"<code>figures/{escape(figure.name)}.svg</code>.</figcaption></figure>"
    )


STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;margin:0 auto;
max-width:1200px;padding:24px}
h1{margin:0 0 4px}h2{font-size:18px;margin:32px 0 4px}
.muted,.caption,.files,figcaption{color:#555}.caption{max-width:900px}
dl.params{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}
dl.params dt{font-weight:600}dl.params dd{margin:0}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#f4f4f6;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.empty{color:#777;font-style:italic}
figure{margin:24px 0;border-top:1px solid #ddd;padding-top:12px}
figure img{max-width:100%;height:auto;display:block}
nav.toc{columns:2;font-size:14px}nav.toc a{color:#0b57d0}
"""


def render_report(
    *,
    title: str,
    tables: Mapping[str, pd.DataFrame],
    captions: Mapping[str, str],
    figures: Sequence[ReportFigure],
    parameters: Mapping[str, Any],
    notes: Sequence[str] = (),
) -> str:
    """Return the whole report: title, parameters, contents, every figure, every table.

    ``captions`` says what the numbers of each table mean (every table needs one);
    ``parameters`` are shown as given (study, date, resamples, seed...); ``notes`` are short
    paragraphs on how the inputs were built.
    """
    missing = [name for name in tables if name not in captions]
    if missing:
        raise ValueError(f"tables without a caption: {', '.join(missing)}")
    params = "".join(f"<dt>{escape(str(key))}</dt><dd>{escape(str(value))}</dd>"
                     for key, value in parameters.items())
    toc = "".join(f"<li><a href=\"#figure-{escape(f.name, quote=True)}\">{escape(f.name)}</a></li>"
                  for f in figures)
    toc += "".join(f"<li><a href=\"#table-{escape(name, quote=True)}\">{escape(name)}</a></li>"
                   for name in tables)
    parts = [
        "<!doctype html>",
        "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<header><h1>{escape(title)}</h1>",
        "<p class=\"muted\">Every table and figure of the failure profile, computed from the "
        "study's final verdicts. The same numbers are in the CSV and JSON file of each table; "
        "shown here to 4 significant digits (the exact value is in each cell's data-value).</p>",
        f"<dl class=\"params\">{params}</dl>",
        "".join(f"<p class=\"note\">{escape(note)}</p>" for note in notes),
        f"</header><nav class=\"toc\"><ul>{toc}</ul></nav>",
        "<main><h2 id=\"figures\">Figures</h2>",
        "".join(render_figure(figure) for figure in figures),
        "<h2 id=\"tables\">Tables</h2>",
        "".join(render_table(name, table, captions[name]) for name, table in tables.items()),
        "</main></body></html>",
    ]
    return "\n".join(parts) + "\n"

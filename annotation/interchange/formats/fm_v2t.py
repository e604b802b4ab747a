"""FM-V2T's description CSVs (``Video-Filename`` and one description column) as references."""

from __future__ import annotations

import csv
from collections.abc import Collection

from annotation.interchange.formats.common import RecordError, _csv_error, _csv_rows, _decode_whole, _last_line_number
from annotation.interchange.formats.references import ReferenceRecord, _language_problem, _ReferenceChecker

FMV2T_SOURCE = "fm-v2t"
FMV2T_CLIP_COLUMN = "Video-Filename"


def parse_fmv2t_descriptions_csv(
    data: bytes, *, language: str, known_clips: Collection[str] | None = None
) -> tuple[list[ReferenceRecord], list[RecordError]]:
    """Parse an FM-V2T description CSV (``clips-wvr-annotations-eng.csv`` or ``-de.csv``): a
    ``Video-Filename`` column and exactly one description column, whatever its header (the German
    file's header is mislabelled, so the column is found by position, not name). References get
    source :data:`FMV2T_SOURCE` and ``language``. Raises ValueError for a malformed ``language``.
    Returns the error-free references and every error."""
    problem = _language_problem(language)
    if problem:
        raise ValueError(f"language {problem}, got {language!r}")
    text, decode_error = _decode_whole(data)
    if decode_error is not None:
        return [], [decode_error]
    assert text is not None
    checker = _ReferenceChecker(known_clips)
    rows = _csv_rows(text)
    try:
        header_line, header = next(rows, (1, []))
        columns = [cell.strip() for cell in header]
        if len(columns) != 2 or columns[0] != FMV2T_CLIP_COLUMN:
            shown = ", ".join(columns) if columns else "nothing"
            return [], [
                RecordError(
                    header_line,
                    "header",
                    f"expected the columns {FMV2T_CLIP_COLUMN} and one description column, "
                    f"got {shown}",
                )
            ]
        for number, row in rows:
            if len(row) != 2:
                checker.errors.append(RecordError(number, "", f"expected 2 cells, got {len(row)}"))
                continue
            checker.add(
                number,
                clip=row[0],
                text=row[1],
                source=FMV2T_SOURCE,
                language=language,
                clip_field=FMV2T_CLIP_COLUMN,
                text_field=columns[1],
            )
    except csv.Error as exc:
        checker.errors.append(_csv_error(exc, _last_line_number(text)))
    return checker.records, checker.errors

"""Writing many rows at once: PostgreSQL's COPY, with the values Django would have filled in.

bulk_create builds a model instance per row and compiles every value through its field, which
for hundreds of thousands of rows costs far more than the database spends storing them. COPY
sends the values as they are. These helpers are for services that write many rows in one go
(the caption import, the assignment); they run inside the caller's transaction, and on SQLite
(no COPY) callers use bulk_create.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models
from django.utils import timezone


def copy_supported() -> bool:
    """Whether the database takes COPY (PostgreSQL)."""
    return connection.vendor == "postgresql"


def ids_reserve(*, model: type[models.Model], count: int) -> list[int]:
    """`count` new primary keys of `model`, ascending, taken from its sequence (PostgreSQL), for
    rows that other rows of the same COPY refer to before they exist."""
    table, column = model._meta.db_table, model._meta.pk.column
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
            [table, column, count],
        )
        return sorted(pk for (pk,) in cursor.fetchall())


def rows_copy(*, model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """COPY `rows` into `model`'s table; each row holds the values of `fields` (attnames, e.g.
    ``caption_id``), in that order, as Python values. Every other column gets what bulk_create
    would give it: its field's default, or the time now for auto_now(_add) fields; the primary
    key its sequence, unless `fields` names it. A refused row raises Django's IntegrityError (or
    DataError) and, as with an INSERT, the statement stores nothing. Returns the rows copied."""
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    given = [by_attname[name] for name in fields]
    filled = [
        f for f in model._meta.concrete_fields
        if f.attname not in fields and not (f.primary_key and isinstance(f, models.AutoField))
    ]
    constant = tuple(_default(f) for f in filled)
    json_at = [n for n, f in enumerate(given) if isinstance(f, models.JSONField)]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in [*given, *filled])
    copied = 0
    # wrap_database_errors: a refusal during COPY is Django's IntegrityError, as from an INSERT.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        with cursor.copy(f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN") as copy:
            for row in rows:
                if json_at:
                    row = list(row)
                    for n in json_at:
                        if row[n] is not None or not given[n].null:
                            row[n] = json.dumps(row[n], cls=given[n].encoder)
                copy.write_row((*row, *constant))
                copied += 1
    return copied


def _default(field: models.Field) -> Any:
    """What bulk_create stores in a column it is not given a value for."""
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return timezone.now()
    value = field.get_default()
    if value is None:
        return None
    if isinstance(field, models.JSONField):
        return json.dumps(value, cls=field.encoder)
    return field.get_db_prep_save(value, connection)

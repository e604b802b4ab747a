"""A closed study's scores take the erasure of a withdrawn person's work (scoring.erasure): the
closed-study guard of ``scoring_scoreresult`` (migration 0009) lets a change through while, and
only while, the erasing transaction holds a withdrawal marked ``erasing``, as annotation's
migration 0034 does for the work tables (its function ``work_rows_refuse_when_closed``).
"""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers

TABLE = ("scoring_scoreresult", "study_id", ())
ERASING = "EXISTS (SELECT 1 FROM annotation_withdrawal WHERE erasing)"


def _with_erasing(statement: str) -> str:
    """A closed-study trigger of SQLite that lets the erasure through."""
    before, after = statement.split(" BEGIN SELECT RAISE", 1)
    head, condition = before.split("\n    WHEN ", 1)
    return f"{head}\n    WHEN NOT {ERASING} AND ({condition}) BEGIN SELECT RAISE{after}"


def create(apps, schema_editor):
    table, column, _ = TABLE
    if schema_editor.connection.vendor == "postgresql":
        lookup = triggers.STUDY_OF[column].format(id="$1")
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS {table}_study_closed ON {table};\n"
            f"CREATE TRIGGER {table}_study_closed BEFORE INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION work_rows_refuse_when_closed('{lookup}', '{column}');\n", params=None)
        return
    for event in ("insert", "update", "delete"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_study_closed_{event}")
    for statement in triggers._sqlite_row_triggers(*TABLE):
        schema_editor.execute(_with_erasing(statement))


def restore(apps, schema_editor):
    triggers.create_rows(schema_editor, [TABLE])


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0034_withdrawal"),
        ("scoring", "0009_closed_studies_keep_their_scores"),
    ]

    operations = [migrations.RunPython(create, restore)]

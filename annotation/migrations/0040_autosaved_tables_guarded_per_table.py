"""The closed-study guards of the three tables every autosave writes (annotations, their passes
and window corrections) are one PostgreSQL function per table, with the table's link to its study
and the study's lookup written in (`table_guard` in _study_state_triggers.py). They refuse and
pass exactly what work_rows_refuse_when_closed did (migrations 0034 and 0037), an erasure
included, at a fraction of its database time on each write. The other tables keep their shared
guards; SQLite's triggers do not change. Going back puts the shared guard on the three tables."""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers


def per_table_guards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        guards = "".join(triggers.table_guard(table, column) for table, column, _ in triggers.AUTOSAVED_TABLES)
        schema_editor.execute(guards, params=None)


def shared_guards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("".join(
        triggers.shared_work_guard(table, column) + f"DROP FUNCTION IF EXISTS {table}_refuse_when_closed();\n"
        for table, column, _ in triggers.AUTOSAVED_TABLES
    ), params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0039_signed_in_sessions"),
    ]

    operations = [migrations.RunPython(per_table_guards, shared_guards)]

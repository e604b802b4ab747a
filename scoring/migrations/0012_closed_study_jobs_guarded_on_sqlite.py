"""SQLite: the closed-study guard of scoring_scorejob again. Migration 0011 added two columns,
and SQLite rebuilt the table to do it, dropping its triggers (migration 0009's): a closed
study's jobs could be changed, inserted and deleted there. PostgreSQL kept its trigger."""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        triggers.create_sqlite_for(schema_editor, "scoring_scorejob")


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0011_runs_with_progress"),
    ]

    operations = [migrations.RunPython(create, migrations.RunPython.noop)]

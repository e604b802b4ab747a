"""A closed or archived study's score jobs, scores and external scores take no insert, update or
delete (annotation's migration 0026 and annotation/migrations/_study_state_triggers.py)."""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers


def create(apps, schema_editor):
    triggers.create_rows(schema_editor, triggers.SCORING_TABLES)


def drop(apps, schema_editor):
    triggers.drop_rows(schema_editor, triggers.SCORING_TABLES)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0026_closed_studies_and_modes_in_use_refused"),
        ("scoring", "0008_external_score_value_finite"),
    ]

    operations = [migrations.RunPython(create, drop)]

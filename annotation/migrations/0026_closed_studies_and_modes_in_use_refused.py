"""The database refuses what a study's state refuses (annotation.services.study_state): the rows
of a closed or archived study (members, invitations, clips, models, captions, references, caption
import jobs) and the study row itself take no insert, update or delete; the failure modes of a
taxonomy version in use do not change. See annotation/migrations/_study_state_triggers.py;
scoring's migration 0009 guards its tables (jobs, scores) the same way."""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers


def create(apps, schema_editor):
    triggers.create_rows(schema_editor, triggers.ANNOTATION_TABLES)
    triggers.create_study_and_modes(schema_editor)


def drop(apps, schema_editor):
    triggers.drop_rows(schema_editor, triggers.ANNOTATION_TABLES)
    triggers.drop_study_and_modes(schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0025_caption_import_job_sha256"),
    ]

    operations = [migrations.RunPython(create, drop)]

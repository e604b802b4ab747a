"""The guidelines of a closed or archived study do not change: the database refuses inserts,
updates and deletes of their versions and of the notices of them (the service asks the study's
state rule first; this is the last guard, as for the study's other rows in migration 0026).

On SQLite it also puts back the invitations' triggers, which migration 0028's rebuild of that
table dropped."""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers

TABLES = [
    ("annotation_guidelineversion", "study_id", ()),
    ("annotation_guidelinenotice", "study_id", ()),
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(triggers.POSTGRES_FUNCTIONS, params=None)
        schema_editor.execute("".join(triggers._postgres_row_trigger(*table) for table in TABLES), params=None)
        return
    for table in TABLES:
        for statement in triggers._sqlite_row_triggers(*table):
            schema_editor.execute(statement)
    triggers.create_sqlite_for(schema_editor, "annotation_invitation")


def drop(apps, schema_editor):
    triggers.drop_rows(schema_editor, TABLES)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0030_gold_items_practice_and_qualification"),
    ]

    operations = [
        migrations.RunPython(create, drop),
    ]

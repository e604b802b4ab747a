"""The closed-study guards of PostgreSQL look the study up with static SQL, planned once per
connection, and once per row when the row's link to its study did not change (almost every
UPDATE). They ran their lookup text with EXECUTE, planned anew, for the old row and again for
the new: an autosave's three writes spent most of their database time there.

The guards refuse and pass exactly what they did (migrations 0026 and 0034; the functions are
in _study_state_triggers.py); the triggers and their arguments stay. SQLite's triggers are
compiled with each statement and do not change. Going back keeps the new bodies, which mean the
same.
"""

from django.db import migrations

from annotation.migrations import _study_state_triggers as triggers


def replace_guards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(triggers.POSTGRES_FUNCTIONS + triggers.WORK_ROWS_GUARD, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0036_withdrawal_ordered_by_time"),
    ]

    operations = [migrations.RunPython(replace_guards, migrations.RunPython.noop)]

"""Undo of decisive actions: the fields, and a state trigger that allows the two undo
transitions (submitted -> in_progress, approved -> in_review) only while the undo window
recorded on the row is open and for the action recorded there. Every other move is as in
migration 0005.
"""

import importlib

from django.db import migrations, models

_TRANSITIONS = importlib.import_module("annotation.migrations.0005_annotation_state_transitions")

UNDO_PAIRS = [("submitted", "in_progress", "submit"), ("approved", "in_review", "approve")]


def _pairs(now: str, action_of_old: str) -> str:
    undo = " OR ".join(
        f"(OLD.state = '{a}' AND NEW.state = '{b}' AND {action_of_old} = '{action}'"
        f" AND OLD.undo_until IS NOT NULL AND OLD.undo_until >= {now})"
        for a, b, action in UNDO_PAIRS
    )
    return f"{_TRANSITIONS.PAIRS} OR {undo}"


POSTGRES_PAIRS = _pairs("statement_timestamp()", "(OLD.undo ->> 'action')")
# Django keeps SQLite datetimes as UTC text 'YYYY-MM-DD HH:MM:SS.ffffff', which sorts like time.
SQLITE_PAIRS = _pairs("strftime('%Y-%m-%d %H:%M:%f', 'now')", "json_extract(OLD.undo, '$.action')")

POSTGRES_FUNCTION = """
CREATE OR REPLACE FUNCTION annotation_state_transition_check() RETURNS trigger AS $$
BEGIN
    IF NEW.state <> OLD.state AND NOT ({pairs}) THEN
        RAISE EXCEPTION 'illegal transition of annotation %: % -> %', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""

SQLITE_TRIGGER = f"""CREATE TRIGGER annotation_state_transition BEFORE UPDATE OF state ON annotation_annotation
    WHEN NEW.state <> OLD.state AND NOT ({SQLITE_PAIRS})
    BEGIN SELECT RAISE(ABORT, 'illegal transition of annotation'); END;"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FUNCTION.format(pairs=POSTGRES_PAIRS), params=None)
        return
    from annotation.migrations._sqlite_triggers import restore_annotation_triggers

    restore_annotation_triggers(apps, schema_editor)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FUNCTION.format(pairs=_TRANSITIONS.PAIRS), params=None)
    else:
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_state_transition")
        schema_editor.execute(_TRANSITIONS.SQLITE[0])


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0009_assignment_designs'),
    ]

    operations = [
        migrations.AddField(
            model_name='annotation',
            name='undo',
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name='annotation',
            name='undo_until',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(create, drop),
    ]

"""Undo of "amend and approve": the state trigger allows approved -> in_review for an amend
whose undo window is open (as migration 0010 does for a plain approval), and the QC pass that
the amendment created may be deleted then, and only then: while its annotation is approved
with an open "amend" undo window. Every other deletion of a correction pass stays refused
(migration 0005). The audit trail keeps what the amendment was.
"""

import importlib

from django.db import migrations

_TRANSITIONS = importlib.import_module("annotation.migrations.0005_annotation_state_transitions")
_UNDO = importlib.import_module("annotation.migrations.0010_annotation_undo")

UNDO_PAIRS = [*_UNDO.UNDO_PAIRS, ("approved", "in_review", "amend")]


def _pairs(now: str, action_of_old: str) -> str:
    undo = " OR ".join(
        f"(OLD.state = '{a}' AND NEW.state = '{b}' AND {action_of_old} = '{action}'"
        f" AND OLD.undo_until IS NOT NULL AND OLD.undo_until >= {now})"
        for a, b, action in UNDO_PAIRS
    )
    return f"{_TRANSITIONS.PAIRS} OR {undo}"


POSTGRES_NOW = "statement_timestamp()"
SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
POSTGRES_PAIRS = _pairs(POSTGRES_NOW, "(OLD.undo ->> 'action')")
SQLITE_PAIRS = _pairs(SQLITE_NOW, "json_extract(OLD.undo, '$.action')")

SQLITE_TRIGGER = f"""CREATE TRIGGER annotation_state_transition BEFORE UPDATE OF state ON annotation_annotation
    WHEN NEW.state <> OLD.state AND NOT ({SQLITE_PAIRS})
    BEGIN SELECT RAISE(ABORT, 'illegal transition of annotation'); END;"""


def _amend_undoable(now: str, action: str) -> str:
    return (
        "OLD.kind = 'qc' AND EXISTS (SELECT 1 FROM annotation_annotation a"
        f" WHERE a.id = OLD.annotation_id AND a.state = 'approved' AND {action} = 'amend'"
        f" AND a.undo_until IS NOT NULL AND a.undo_until >= {now})"
    )


POSTGRES_PASS_DELETE = f"""
CREATE OR REPLACE FUNCTION annotation_refuse_pass_delete() RETURNS trigger AS $$
BEGIN
    IF {_amend_undoable(POSTGRES_NOW, "(a.undo ->> 'action')")} THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'rows of % are never deleted', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS annotation_correctionpass_no_delete ON annotation_correctionpass;
CREATE TRIGGER annotation_correctionpass_no_delete BEFORE DELETE ON annotation_correctionpass
    FOR EACH ROW EXECUTE FUNCTION annotation_refuse_pass_delete();
"""
POSTGRES_PASS_DELETE_BACK = """
DROP TRIGGER IF EXISTS annotation_correctionpass_no_delete ON annotation_correctionpass;
CREATE TRIGGER annotation_correctionpass_no_delete BEFORE DELETE ON annotation_correctionpass
    FOR EACH ROW EXECUTE FUNCTION annotation_refuse_delete();
DROP FUNCTION IF EXISTS annotation_refuse_pass_delete();
"""
SQLITE_PASS_DELETE = f"""CREATE TRIGGER annotation_correctionpass_no_delete BEFORE DELETE ON annotation_correctionpass
    WHEN NOT ({_amend_undoable(SQLITE_NOW, "json_extract(a.undo, '$.action')")})
    BEGIN SELECT RAISE(ABORT, 'rows of annotation_correctionpass are never deleted'); END;"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_UNDO.POSTGRES_FUNCTION.format(pairs=POSTGRES_PAIRS), params=None)
        schema_editor.execute(POSTGRES_PASS_DELETE, params=None)
        return
    from annotation.migrations._sqlite_triggers import restore_annotation_triggers

    restore_annotation_triggers(apps, schema_editor)
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_correctionpass_no_delete")
    schema_editor.execute(SQLITE_PASS_DELETE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_UNDO.POSTGRES_FUNCTION.format(pairs=_UNDO.POSTGRES_PAIRS), params=None)
        schema_editor.execute(POSTGRES_PASS_DELETE_BACK, params=None)
        return
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_state_transition")
    schema_editor.execute(_UNDO.SQLITE_TRIGGER)
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_correctionpass_no_delete")
    schema_editor.execute(next(s for s in _TRANSITIONS.SQLITE if "annotation_correctionpass_no_delete" in s))


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0018_life_study_lifecycle'),
    ]

    operations = [
        migrations.RunPython(create, drop),
    ]

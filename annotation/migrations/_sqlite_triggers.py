"""SQLite rebuilds a table to add most columns, and the rebuild drops the table's triggers.

Migrations that change annotation_annotation on SQLite call `restore_annotation_triggers`
afterwards, so that the workflow triggers of migration 0005 keep guarding the table (with the
undo transitions of migration 0010 once its columns exist, with the undo of an amendment of
migration 0016: a superset, harmless before 0016 runs).
(The leading underscore keeps Django's migration loader from reading this as a migration.)
"""

import importlib

_TRANSITIONS = importlib.import_module("annotation.migrations.0005_annotation_state_transitions")


def restore_annotation_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return  # PostgreSQL keeps triggers when columns are added
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_state_transition")
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_annotation_no_delete")
    columns = {
        column.name
        for column in schema_editor.connection.introspection.get_table_description(
            schema_editor.connection.cursor(), "annotation_annotation"
        )
    }
    for statement in _TRANSITIONS.SQLITE:
        if "ON annotation_annotation" in statement:
            if "annotation_state_transition" in statement and "undo_until" in columns:
                statement = importlib.import_module("annotation.migrations.0019_qc_amend_undo").SQLITE_TRIGGER
            schema_editor.execute(statement)


def restore_study_triggers(apps, schema_editor):
    """The lifecycle triggers of migration 0016 (and 0022's) on annotation_study, after a SQLite
    rebuild."""
    if schema_editor.connection.vendor != "sqlite":
        return
    lifecycle = importlib.import_module("annotation.migrations.0018_life_study_lifecycle")
    lifecycle.drop(apps, schema_editor)
    lifecycle.create(apps, schema_editor)
    # And migration 0026's: a closed or archived study's row takes no change but archiving.
    from annotation.migrations import _study_state_triggers

    schema_editor.execute("DROP TRIGGER IF EXISTS study_closed_no_change")
    schema_editor.execute(_study_state_triggers.SQLITE_STUDY_AND_MODES[0])


def _window_correction_trigger(event: str) -> str:
    """A window correction may not overlap the other windows of its pass, each at its
    effective times (its correction's where the pass has one, else the original window's)."""
    return f"""
CREATE TRIGGER annotation_windowcorrection_timeline_{event.lower()}
BEFORE {event} ON annotation_windowcorrection
BEGIN
    SELECT RAISE(ABORT, 'corrected window overlaps another window of its pass')
     WHERE EXISTS (
        SELECT 1
          FROM annotation_window this
          JOIN annotation_window other ON other.caption_id = this.caption_id AND other.id != this.id
          LEFT JOIN annotation_windowcorrection c
            ON c.correction_pass_id = NEW.correction_pass_id AND c.window_id = other.id
         WHERE this.id = NEW.window_id
           AND ((other."index" < this."index" AND coalesce(c."end", other."end") > NEW.start)
             OR (other."index" > this."index" AND coalesce(c.start, other.start) < NEW."end")));
END;
"""


# Migration 0016's triggers; a migration that rebuilds annotation_windowcorrection on SQLite
# drops them and must run these again.
WINDOW_CORRECTION_SQLITE = [_window_correction_trigger("INSERT"), _window_correction_trigger("UPDATE")]

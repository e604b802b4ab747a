"""A trigger that refuses illegal workflow transitions, whatever code path tries them.

The allowed moves are frozen here (they mirror annotation.rules.workflow.TRANSITIONS;
tests/annotation/test_workflow.py checks the two agree). An approved annotation
never changes state again, and nothing is ever deleted from the workflow tables.
"""

from django.db import migrations

ALLOWED = [
    ("assigned", "in_progress"),
    ("returned", "in_progress"),
    ("in_progress", "submitted"),
    ("submitted", "in_review"),
    ("in_review", "in_review"),
    ("in_review", "submitted"),
    ("in_review", "approved"),
    ("in_review", "returned"),
]
PAIRS = " OR ".join(f"(OLD.state = '{a}' AND NEW.state = '{b}')" for a, b in ALLOWED)
KEPT_TABLES = ["annotation_annotation", "annotation_correctionpass", "annotation_auditevent"]

POSTGRES = f"""
CREATE OR REPLACE FUNCTION annotation_state_transition_check() RETURNS trigger AS $$
BEGIN
    IF NEW.state <> OLD.state AND NOT ({PAIRS}) THEN
        RAISE EXCEPTION 'illegal transition of annotation %: % -> %', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER annotation_state_transition BEFORE UPDATE ON annotation_annotation
    FOR EACH ROW EXECUTE FUNCTION annotation_state_transition_check();

CREATE OR REPLACE FUNCTION annotation_refuse_delete() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'rows of % are never deleted', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION annotation_refuse_audit_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are never changed' USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER annotation_audit_no_update BEFORE UPDATE ON annotation_auditevent
    FOR EACH ROW EXECUTE FUNCTION annotation_refuse_audit_update();
""" + "".join(
    f"CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} "
    f"FOR EACH ROW EXECUTE FUNCTION annotation_refuse_delete();\n"
    for table in KEPT_TABLES
)

SQLITE = [
    f"""CREATE TRIGGER annotation_state_transition BEFORE UPDATE OF state ON annotation_annotation
    WHEN NEW.state <> OLD.state AND NOT ({PAIRS})
    BEGIN SELECT RAISE(ABORT, 'illegal transition of annotation'); END;""",
    """CREATE TRIGGER annotation_audit_no_update BEFORE UPDATE ON annotation_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit events are never changed'); END;""",
] + [
    f"""CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
    BEGIN SELECT RAISE(ABORT, 'rows of {table} are never deleted'); END;"""
    for table in KEPT_TABLES
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)
    else:
        for statement in SQLITE:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    postgres = schema_editor.connection.vendor == "postgresql"
    suffix = " ON annotation_annotation" if postgres else ""
    schema_editor.execute(f"DROP TRIGGER IF EXISTS annotation_state_transition{suffix}")
    schema_editor.execute(
        "DROP TRIGGER IF EXISTS annotation_audit_no_update" + (" ON annotation_auditevent" if postgres else "")
    )
    for table in KEPT_TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete" + (f" ON {table}" if postgres else ""))


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_workflow")]
    operations = [migrations.RunPython(create, drop)]

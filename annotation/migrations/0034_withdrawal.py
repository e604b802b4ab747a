"""Withdrawal (annotation.services.withdrawal): the study's setting ``erase_on_withdrawal`` and
the table of withdrawals.

A withdrawal is honoured in a closed study too, erasure included: the database's guards of a
closed study's work rows (migration 0026) and of the audit trail (migration 0005) let an erasure
through while, and only while, the erasing transaction holds a withdrawal marked ``erasing``
(never committed so). The work tables' closed-study triggers are made again here with that
exception; an audit event may change only to ``{"erased": true}`` before and after, and only then.
The withdrawal table itself takes rows in any state (withdrawing from a closed study is allowed).

SQLite rebuilds annotation_study to add the column, dropping its triggers: they are put back at
the end, and the triggers of other tables that name it are kept aside meanwhile (as 0030 does).
A later migration that makes the closed-study triggers of the three work tables again
(``_study_state_triggers.create_sqlite_for``) drops the exception: make it again there.
"""

import re

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from annotation.migrations import _study_state_triggers as triggers
from annotation.migrations._sqlite_triggers import restore_study_triggers

ERASING = "EXISTS (SELECT 1 FROM annotation_withdrawal WHERE erasing)"
WORK_TABLES = [table for table in triggers.ANNOTATION_TABLES if table[0] in (
    "annotation_annotation", "annotation_correctionpass", "annotation_windowcorrection")]
ERASED = '{"erased": true}'

POSTGRES = f"""
CREATE OR REPLACE FUNCTION work_rows_refuse_when_closed() RETURNS trigger AS $$
DECLARE
    lookup text := TG_ARGV[0];
    found_state text;
    row_data jsonb;
BEGIN
    IF {ERASING} THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND to_jsonb(NEW) = to_jsonb(OLD) THEN
        RETURN NEW;
    END IF;
    FOREACH row_data IN ARRAY ARRAY[
        CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END,
        CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END
    ] LOOP
        CONTINUE WHEN row_data IS NULL;
        EXECUTE lookup INTO found_state USING (row_data ->> TG_ARGV[1])::bigint;
        IF found_state IN {triggers.CLOSED} THEN
            RAISE EXCEPTION 'the study is %: {triggers.MARK} (%)', found_state, TG_TABLE_NAME
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION annotation_refuse_audit_update() RETURNS trigger AS $$
BEGIN
    IF {ERASING} AND NEW.before = '{ERASED}'::jsonb AND NEW.after = '{ERASED}'::jsonb
       AND (to_jsonb(NEW) - 'before' - 'after') = (to_jsonb(OLD) - 'before' - 'after') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit events are never changed' USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
""" + "".join(
    f"DROP TRIGGER IF EXISTS {table}_study_closed ON {table};\n"
    f"CREATE TRIGGER {table}_study_closed BEFORE INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
    f"EXECUTE FUNCTION work_rows_refuse_when_closed('{triggers.STUDY_OF[column].format(id='$1')}', '{column}');\n"
    for table, column, _ in WORK_TABLES
)

SQLITE_AUDIT = f"""CREATE TRIGGER annotation_audit_no_update BEFORE UPDATE ON annotation_auditevent
    WHEN NOT ({ERASING} AND NEW.before = '{ERASED}' AND NEW.after = '{ERASED}'
              AND NEW.study_id IS OLD.study_id AND NEW.annotation_id IS OLD.annotation_id
              AND NEW.actor_id IS OLD.actor_id AND NEW.action IS OLD.action AND NEW.at IS OLD.at)
    BEGIN SELECT RAISE(ABORT, 'audit events are never changed'); END;"""

REBUILT = ("annotation_study",)
_kept_aside: list[tuple[str, str]] = []


def _with_erasing(statement: str) -> str:
    """A closed-study trigger of SQLite that lets the erasure through."""
    return re.sub(r"WHEN (.*?)\s*BEGIN SELECT RAISE", lambda m: f"WHEN NOT {ERASING} AND ({m.group(1)}) "
                  "BEGIN SELECT RAISE", statement, count=1, flags=re.S)


def sqlite_triggers_aside(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'")
        rows = cursor.fetchall()
    _kept_aside.clear()
    for name, table, sql in rows:
        if table not in REBUILT and any(rebuilt in sql for rebuilt in REBUILT):
            _kept_aside.append((name, sql))
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


def triggers_create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)
        return
    for name, sql in _kept_aside:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
        schema_editor.execute(sql)
    _kept_aside.clear()
    restore_study_triggers(apps, schema_editor)
    triggers.create_study_and_modes(schema_editor)
    for table in WORK_TABLES:
        for event in ("insert", "update", "delete"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table[0]}_study_closed_{event}")
        for statement in triggers._sqlite_row_triggers(*table):
            schema_editor.execute(_with_erasing(statement))
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_audit_no_update")
    schema_editor.execute(SQLITE_AUDIT)


def triggers_restore(apps, schema_editor):
    """Back to the guards without the erasure's exception."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(triggers.POSTGRES_FUNCTIONS, params=None)
        schema_editor.execute("".join(triggers._postgres_row_trigger(*table) for table in WORK_TABLES), params=None)
        schema_editor.execute("""CREATE OR REPLACE FUNCTION annotation_refuse_audit_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are never changed' USING ERRCODE = 'restrict_violation';
END;
$$ LANGUAGE plpgsql;
DROP FUNCTION IF EXISTS work_rows_refuse_when_closed();""", params=None)
        return
    for table in WORK_TABLES:
        triggers.create_sqlite_for(schema_editor, table[0])
    schema_editor.execute("DROP TRIGGER IF EXISTS annotation_audit_no_update")
    schema_editor.execute("""CREATE TRIGGER annotation_audit_no_update BEFORE UPDATE ON annotation_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit events are never changed'); END;""")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0033_consent_texts_and_records'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(sqlite_triggers_aside, migrations.RunPython.noop),
        migrations.AddField(
            model_name='study',
            name='erase_on_withdrawal',
            field=models.BooleanField(default=False, help_text="erase a withdrawing member's annotations at once"),
        ),
        migrations.CreateModel(
            name='Withdrawal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('pseudonym', models.CharField(help_text="the participant's pseudonym, or the member's username", max_length=150)),
                ('at', models.DateTimeField(auto_now_add=True)),
                ('released', models.PositiveIntegerField(default=0, help_text='waiting items given back to the pool')),
                ('erase_requested', models.BooleanField(default=False)),
                ('erased_at', models.DateTimeField(blank=True, null=True)),
                ('erased', models.PositiveIntegerField(default=0, help_text='annotations whose content was erased')),
                ('erasing', models.BooleanField(default=False)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='withdrawals', to='annotation.study')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['study', 'at', 'pk'],
                'constraints': [models.UniqueConstraint(fields=('study', 'user'), name='withdrawal_once_per_person'), models.CheckConstraint(condition=models.Q(('erased_at__isnull', True), ('erase_requested', True), _connector='OR'), name='withdrawal_erased_if_requested')],
            },
        ),
        migrations.RunPython(triggers_create, triggers_restore),
    ]

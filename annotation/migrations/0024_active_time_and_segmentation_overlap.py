"""Active time counts from the item's opening, and a pass's corrected segmentation may not overlap.

`Annotation.active_until` is up to when the annotator's active time is counted: set when they
open the item (each visit of the workspace), moved on by each save's credit
(annotation.services.annotating.active_credit).

A rejected segmentation's corrected windows (`CorrectionPass.corrected_windows`, a JSON list in
time order) are refused by the database when one ends after the next starts, as migration 0020
refuses overlapping window corrections; the services refuse them first, with the window's
number. Rows stored before are left as they are: `manage.py list_overlapping_windows` lists them.
"""

from django.db import migrations, models

from annotation.migrations._sqlite_triggers import restore_annotation_triggers

POSTGRES_FORWARD = """
CREATE OR REPLACE FUNCTION annotation_correctionpass_segmentation_check() RETURNS trigger AS $$
DECLARE
    bad record;
BEGIN
    IF jsonb_typeof(NEW.corrected_windows) = 'array' THEN
        SELECT a.n AS number, a.w->>'start' AS a_start, a.w->>'end' AS a_end,
               b.w->>'start' AS b_start, b.w->>'end' AS b_end INTO bad
          FROM jsonb_array_elements(NEW.corrected_windows) WITH ORDINALITY a(w, n)
          JOIN jsonb_array_elements(NEW.corrected_windows) WITH ORDINALITY b(w, n) ON b.n = a.n + 1
         WHERE (a.w->>'end')::double precision > (b.w->>'start')::double precision
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'corrected segmentation window % [% s, % s] overlaps window % [% s, % s] of its pass',
                bad.number, bad.a_start, bad.a_end, bad.number + 1, bad.b_start, bad.b_end
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_correctionpass_segmentation_overlap
    BEFORE INSERT OR UPDATE OF corrected_windows ON annotation_correctionpass
    FOR EACH ROW EXECUTE FUNCTION annotation_correctionpass_segmentation_check();
"""

POSTGRES_BACKWARD = """
DROP TRIGGER IF EXISTS annotation_correctionpass_segmentation_overlap ON annotation_correctionpass;
DROP FUNCTION IF EXISTS annotation_correctionpass_segmentation_check();
"""


def _sqlite_trigger(event: str) -> str:
    return f"""
CREATE TRIGGER annotation_correctionpass_segmentation_{event.lower()}
BEFORE {event} ON annotation_correctionpass
WHEN json_valid(NEW.corrected_windows) AND json_type(NEW.corrected_windows) = 'array'
BEGIN
    SELECT RAISE(ABORT, 'corrected segmentation window overlaps the next window of its pass')
     WHERE EXISTS (
        SELECT 1
          FROM json_each(NEW.corrected_windows) a
          JOIN json_each(NEW.corrected_windows) b ON b.key = a.key + 1
         WHERE CAST(json_extract(a.value, '$.end') AS REAL) > CAST(json_extract(b.value, '$.start') AS REAL));
END;
"""


SQLITE = [_sqlite_trigger("INSERT"), _sqlite_trigger("UPDATE")]


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)
    else:
        raise RuntimeError(f"Redline supports PostgreSQL and SQLite, not {vendor}")


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_BACKWARD, params=None)
    else:
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_correctionpass_segmentation_insert")
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_correctionpass_segmentation_update")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0023_amended_windows_reach_timeline")]
    operations = [
        migrations.AddField(
            model_name="annotation",
            name="active_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(restore_annotation_triggers, migrations.RunPython.noop),
        migrations.RunPython(create_triggers, drop_triggers),
    ]

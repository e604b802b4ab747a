"""A pass's corrected windows may not overlap, and an autosave remembers when it was made.

Migrations 0002/0011 keep a caption's windows in order without overlap. These triggers do the
same for a correction pass's windows at their effective times: a window's correction's start
and end where the pass has one, else the original window's. PostgreSQL checks once per
statement (the passes it wrote, each as one index-ordered scan, as 0011 does); SQLite checks
each row as it is written against the others as they stand, so the services write moving
rows in an order that never overlaps on the way (annotation.rules.window_times.write_layers).

`Annotation.last_saved_at` is when the annotator's last autosave was stored: a save credits
at most the wall time since then as active time.
"""

from django.db import migrations, models

from annotation.migrations._sqlite_triggers import (
    WINDOW_CORRECTION_SQLITE,
    restore_annotation_triggers,
)

POSTGRES_FORWARD = """
CREATE OR REPLACE FUNCTION annotation_windowcorrection_timeline_check() RETURNS trigger AS $$
DECLARE
    bad record;
BEGIN
    SELECT timeline.index, timeline.start, timeline."end",
           timeline.previous_index, timeline.previous_start, timeline.previous_end INTO bad
      FROM (SELECT DISTINCT correction_pass_id FROM written) touched
      JOIN annotation_correctionpass pass ON pass.id = touched.correction_pass_id
      JOIN annotation_annotation item ON item.id = pass.annotation_id
     CROSS JOIN LATERAL (
        SELECT w.index, coalesce(c.start, w.start) AS start, coalesce(c."end", w."end") AS "end",
               lag(w.index) OVER ordered AS previous_index,
               lag(coalesce(c.start, w.start)) OVER ordered AS previous_start,
               lag(coalesce(c."end", w."end")) OVER ordered AS previous_end
          FROM annotation_window w
          LEFT JOIN annotation_windowcorrection c ON c.correction_pass_id = pass.id AND c.window_id = w.id
         WHERE w.caption_id = item.caption_id
        WINDOW ordered AS (ORDER BY w.index)
     ) timeline
     WHERE timeline.previous_end > timeline.start
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'corrected window % [% s, % s] overlaps window % [% s, % s] of its pass',
            bad.previous_index + 1, bad.previous_start, bad.previous_end,
            bad.index + 1, bad.start, bad."end" USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_windowcorrection_timeline_insert
    AFTER INSERT ON annotation_windowcorrection REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_windowcorrection_timeline_check();
CREATE TRIGGER annotation_windowcorrection_timeline_update
    AFTER UPDATE ON annotation_windowcorrection REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_windowcorrection_timeline_check();
"""

POSTGRES_BACKWARD = """
DROP TRIGGER IF EXISTS annotation_windowcorrection_timeline_insert ON annotation_windowcorrection;
DROP TRIGGER IF EXISTS annotation_windowcorrection_timeline_update ON annotation_windowcorrection;
DROP FUNCTION IF EXISTS annotation_windowcorrection_timeline_check();
"""


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
    elif vendor == "sqlite":
        for statement in WINDOW_CORRECTION_SQLITE:
            schema_editor.execute(statement)
    else:
        raise RuntimeError(f"Redline supports PostgreSQL and SQLite, not {vendor}")


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_BACKWARD, params=None)
    else:
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_windowcorrection_timeline_insert")
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_windowcorrection_timeline_update")


class Migration(migrations.Migration):
    dependencies = [('annotation', '0019_qc_amend_undo')]
    operations = [
        migrations.RunPython(create_triggers, drop_triggers),
        migrations.AddField(
            model_name="annotation",
            name="last_saved_at",
            field=models.DateTimeField(
                blank=True, null=True, help_text="when the annotator's last autosave was stored"
            ),
        ),
        migrations.RunPython(restore_annotation_triggers, migrations.RunPython.noop),
    ]

"""On PostgreSQL the timeline of migration 0002 is checked once per statement, not per row.

The row trigger ran two queries for every window stored (the clip's duration, then the other
windows of the caption), which made an import of 800,000 windows spend most of its time in the
trigger. These triggers check the same two rules once per INSERT, UPDATE or COPY, over all the
rows it wrote (a transition table) and all the windows of their captions:

- no window ends more than TOLERANCE_S past its clip's duration;
- the windows of a caption, in index order, each start at or after the previous one ends.
  With start < end on every row (a check constraint, enforced first), that is the same as
  0002's rule that every earlier window ends at or before a window starts and every later
  one starts at or after it ends.

They run after the statement, so a statement is refused as a whole (the same error, the same
errcode) and nothing it wrote stays. SQLite has no statement triggers; its row triggers stay.
"""

import importlib

from django.db import migrations

_ROW = importlib.import_module("annotation.migrations.0002_window_timeline_triggers")

TOLERANCE_S = _ROW.TOLERANCE_S

POSTGRES_FORWARD = f"""
DROP TRIGGER IF EXISTS annotation_window_timeline ON annotation_window;
DROP FUNCTION IF EXISTS annotation_window_timeline_check();

CREATE OR REPLACE FUNCTION annotation_window_timeline_statement_check() RETURNS trigger AS $$
DECLARE
    bad record;
    window_row record;
BEGIN
    -- The latest end written per caption against its clip (a lookup per caption, not per row);
    -- then, only to say which, the first window of that caption past the end.
    SELECT latest.caption_id, clip.duration INTO bad
      FROM (SELECT caption_id, max("end") AS "end" FROM written GROUP BY caption_id) latest
      JOIN annotation_caption caption ON caption.id = latest.caption_id
      JOIN annotation_clip clip ON clip.id = caption.clip_id
     WHERE latest."end" > clip.duration + {TOLERANCE_S}
     LIMIT 1;
    IF FOUND THEN
        SELECT written.index, written."end" INTO window_row
          FROM written
         WHERE written.caption_id = bad.caption_id AND written."end" > bad.duration + {TOLERANCE_S}
         ORDER BY written.index
         LIMIT 1;
        RAISE EXCEPTION 'window % ends at % s, past the clip end (% s)',
            window_row.index, window_row."end", bad.duration USING ERRCODE = 'check_violation';
    END IF;
    -- The windows of each caption written to, in index order: one index scan per caption.
    SELECT timeline.index, timeline.start, timeline."end" INTO bad
      FROM (SELECT DISTINCT caption_id FROM written) touched
     CROSS JOIN LATERAL (
        SELECT other.index, other.start, other."end",
               lag(other."end") OVER (ORDER BY other.index) AS previous_end
          FROM annotation_window other
         WHERE other.caption_id = touched.caption_id
     ) timeline
     WHERE timeline.previous_end > timeline.start
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'window % [% s, % s] overlaps or is out of order with another window',
            bad.index, bad.start, bad."end" USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_window_timeline_insert
    AFTER INSERT ON annotation_window REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_window_timeline_statement_check();
CREATE TRIGGER annotation_window_timeline_update
    AFTER UPDATE ON annotation_window REFERENCING NEW TABLE AS written
    FOR EACH STATEMENT EXECUTE FUNCTION annotation_window_timeline_statement_check();
"""

POSTGRES_BACKWARD = """
DROP TRIGGER IF EXISTS annotation_window_timeline_insert ON annotation_window;
DROP TRIGGER IF EXISTS annotation_window_timeline_update ON annotation_window;
DROP FUNCTION IF EXISTS annotation_window_timeline_statement_check();
""" + _ROW.POSTGRES_FORWARD


def per_statement(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)


def per_row(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0010_annotation_undo")]
    operations = [migrations.RunPython(per_statement, per_row)]

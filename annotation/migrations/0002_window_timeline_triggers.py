"""Database triggers that keep every caption's timeline possible.

Check constraints cover one row (0 <= start < end). These triggers cover what
spans rows: a window ends at most WINDOW_END_TOLERANCE_S past its clip's
duration, and windows are in time order without overlap (every earlier window
ends at or before this one starts; every later one starts at or after it ends).
The tolerance is frozen here on purpose: a migration must not change meaning
when the code moves on. tests/annotation/test_window_constraints.py checks it
still equals annotation.interchange.formats.WINDOW_END_TOLERANCE_S.
"""

from django.db import migrations

TOLERANCE_S = 0.5

POSTGRES_FORWARD = f"""
CREATE OR REPLACE FUNCTION annotation_window_timeline_check() RETURNS trigger AS $$
DECLARE
    clip_duration double precision;
BEGIN
    SELECT clip.duration INTO clip_duration
      FROM annotation_caption caption JOIN annotation_clip clip ON clip.id = caption.clip_id
     WHERE caption.id = NEW.caption_id;
    IF NEW."end" > clip_duration + {TOLERANCE_S} THEN
        RAISE EXCEPTION 'window % ends at % s, past the clip end (% s)',
            NEW.index, NEW."end", clip_duration USING ERRCODE = 'check_violation';
    END IF;
    IF EXISTS (
        SELECT 1 FROM annotation_window other
         WHERE other.caption_id = NEW.caption_id AND other.id IS DISTINCT FROM NEW.id
           AND ((other.index < NEW.index AND other."end" > NEW.start)
             OR (other.index > NEW.index AND other.start < NEW."end"))
    ) THEN
        RAISE EXCEPTION 'window % [% s, % s] overlaps or is out of order with another window',
            NEW.index, NEW.start, NEW."end" USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER annotation_window_timeline
    BEFORE INSERT OR UPDATE ON annotation_window
    FOR EACH ROW EXECUTE FUNCTION annotation_window_timeline_check();
"""

POSTGRES_BACKWARD = """
DROP TRIGGER IF EXISTS annotation_window_timeline ON annotation_window;
DROP FUNCTION IF EXISTS annotation_window_timeline_check();
"""


def sqlite_trigger(event: str) -> str:
    other_is_not_new = "AND other.id != NEW.id" if event == "UPDATE" else ""
    return f"""
CREATE TRIGGER annotation_window_timeline_{event.lower()}
BEFORE {event} ON annotation_window
BEGIN
    SELECT RAISE(ABORT, 'window ends past the clip end')
     WHERE NEW."end" > (
        SELECT clip.duration + {TOLERANCE_S}
          FROM annotation_caption caption JOIN annotation_clip clip ON clip.id = caption.clip_id
         WHERE caption.id = NEW.caption_id);
    SELECT RAISE(ABORT, 'window overlaps or is out of order with another window')
     WHERE EXISTS (
        SELECT 1 FROM annotation_window other
         WHERE other.caption_id = NEW.caption_id {other_is_not_new}
           AND ((other."index" < NEW."index" AND other."end" > NEW.start)
             OR (other."index" > NEW."index" AND other.start < NEW."end")));
END;
"""


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_FORWARD, params=None)
    elif vendor == "sqlite":
        schema_editor.execute(sqlite_trigger("INSERT"))
        schema_editor.execute(sqlite_trigger("UPDATE"))
    else:
        raise RuntimeError(f"Redline supports PostgreSQL and SQLite, not {vendor}")


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_BACKWARD, params=None)
    else:
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_window_timeline_insert")
        schema_editor.execute("DROP TRIGGER IF EXISTS annotation_window_timeline_update")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]
    operations = [migrations.RunPython(create_triggers, drop_triggers)]

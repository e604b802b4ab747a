"""The database's half of the study's state rule (annotation.services.study_state): nothing of a
closed or archived study changes, and the failure modes of a taxonomy version in use do not
change. Shared by annotation's migration 0026 and scoring's migration 0009 (its tables).

- The rows that belong to a study (its members, invitations, clips, models, captions and their
  windows, references, jobs and scores, and its work: annotations, their passes and window
  corrections) refuse INSERT, UPDATE and DELETE while the study is closed or archived. An
  UPDATE that changes nothing passes, and so does one that changes only a table's `derived`
  columns: a clip's proxy, poster and shot changes are made from the video already stored, by
  a job that may end after the study closed.
- The study row itself, closed or archived, takes no change but the move to archived (the
  lifecycle trigger of migration 0018 orders the moves).
- A failure mode refuses INSERT, UPDATE and DELETE once its taxonomy version is frozen (in use
  by an assignment) or used by a study that left setup.

What closing writes is not refused: it ends the study's unfinished jobs before its state
changes, and its audit events and final profile (files) are not rows of these tables.

PostgreSQL's row guards find the study with static SQL (`study_state_of`), planned once per
connection, and once per row when its link column did not change (migration 0037); they are the
database's part of every autosave, so keep them free of EXECUTE.

The columns and tables are fixed here on purpose (a migration must not change meaning later).
SQLite's RAISE takes a fixed message; PostgreSQL's names the state and table. Both carry
"its rows do not change", by which annotation.middleware answers 409 to a path whose service
forgot to ask. SQLite rebuilds a table to add most columns, dropping its triggers: a later
migration that changes one of these tables on SQLite runs `create_sqlite_for(table)` again.
"""

from __future__ import annotations

CLOSED = "('closed', 'archived')"
MARK = "its rows do not change"

# (table, the column that leads to its study (see STUDY_OF), derived columns).
ANNOTATION_TABLES = [
    ("annotation_membership", "study_id", ()),
    ("annotation_invitation", "study_id", ()),
    ("annotation_clip", "study_id", ("proxy", "poster", "media_error", "shot_changes")),
    ("annotation_candidatemodel", "study_id", ()),
    ("annotation_caption", "clip_id", ()),
    ("annotation_window", "caption_id", ()),
    ("annotation_reference", "clip_id", ()),
    ("annotation_captionimportjob", "study_id", ()),
    # The work: a closed study's annotations and their passes do not change either.
    ("annotation_annotation", "caption_id", ()),
    ("annotation_correctionpass", "annotation_id", ()),
    ("annotation_windowcorrection", "correction_pass_id", ()),
]
# The study's state, from the row's column that leads to it; `{id}` is that column's value.
STUDY_OF = {
    "study_id": "SELECT s.state FROM annotation_study s WHERE s.id = {id}",
    "clip_id": "SELECT s.state FROM annotation_clip k JOIN annotation_study s ON s.id = k.study_id WHERE k.id = {id}",
    "caption_id": ("SELECT s.state FROM annotation_caption c JOIN annotation_clip k ON k.id = c.clip_id "
                   "JOIN annotation_study s ON s.id = k.study_id WHERE c.id = {id}"),
    "annotation_id": ("SELECT s.state FROM annotation_annotation a JOIN annotation_caption c ON c.id = a.caption_id "
                      "JOIN annotation_clip k ON k.id = c.clip_id JOIN annotation_study s ON s.id = k.study_id "
                      "WHERE a.id = {id}"),
    "correction_pass_id": ("SELECT s.state FROM annotation_correctionpass p "
                           "JOIN annotation_annotation a ON a.id = p.annotation_id "
                           "JOIN annotation_caption c ON c.id = a.caption_id "
                           "JOIN annotation_clip k ON k.id = c.clip_id "
                           "JOIN annotation_study s ON s.id = k.study_id WHERE p.id = {id}"),
}
SCORING_TABLES = [
    ("scoring_scorejob", "study_id", ()),
    ("scoring_scoreresult", "study_id", ()),
    ("scoring_externalscore", "study_id", ()),
]
# The clip's columns other than the derived ones, for SQLite (which has no row comparison).
CLIP_CONTENT_COLUMNS = [
    "study_id", "name", "original", "original_filename", "size_bytes", "sha256", "duration", "fps",
    "width", "height", "codec", "pix_fmt", "container", "content_type", "camera_platform",
    "scene_complexity", "shot_scale", "motion_intensity", "manipulated", "created_at",
]
STUDY_COLUMNS = [
    "slug", "name", "description", "taxonomy_id", "word_thresholds", "near_total_cut", "length_band",
    "assignment_design", "spread_gap", "assignment_seed", "caption_language", "undo_seconds",
    "overlap_share", "release_secret", "created_at",
]

# The study's state from the value of one of STUDY_OF's columns: static SQL, which PL/pgSQL
# plans once per connection (an EXECUTE of the lookup text was planned anew on every row).
STUDY_STATE_OF = (
    "CREATE OR REPLACE FUNCTION study_state_of(link text, row_id bigint) RETURNS text AS $$\n"
    "BEGIN\n    CASE link\n"
    + "".join(f"    WHEN '{column}' THEN\n        RETURN ({lookup.format(id='row_id')});\n"
              for column, lookup in STUDY_OF.items())
    + "    END CASE;\nEND;\n$$ LANGUAGE plpgsql STABLE;\n"
)
# What lets a closed study's work rows change: an erasure under way (annotation migration 0034).
ERASING = "EXISTS (SELECT 1 FROM annotation_withdrawal WHERE erasing)"


def _row_guard(name: str, unless: str = "") -> str:
    """A row trigger function refusing a change of a closed or archived study's rows, unless
    `unless` holds (SQL). Its arguments: STUDY_OF's query (kept for the record), the column that
    leads to the study, then the derived columns whose change alone passes. The study is looked
    up once when the row's link is the same before and after, as it is on almost every UPDATE."""
    refused = f"found_state IN {CLOSED}" + (f" AND NOT {unless}" if unless else "")
    return f"""
CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$
DECLARE
    link text := TG_ARGV[1];
    derived text[] := TG_ARGV[2:TG_NARGS - 1];
    old_row jsonb;
    new_row jsonb;
    link_id text;
    looked_up text;
    found_state text;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        old_row := to_jsonb(OLD) - derived;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        new_row := to_jsonb(NEW) - derived;
    END IF;
    IF TG_OP = 'UPDATE' AND new_row = old_row THEN
        RETURN NEW;
    END IF;
    FOREACH link_id IN ARRAY ARRAY[old_row ->> link, new_row ->> link] LOOP
        CONTINUE WHEN link_id IS NULL OR link_id = looked_up;
        looked_up := link_id;
        found_state := study_state_of(link, link_id::bigint);
        IF {refused} THEN
            RAISE EXCEPTION 'the study is %: {MARK} (%)', found_state, TG_TABLE_NAME
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


# The guard of the work rows, which take an erasure (annotation migration 0034: annotations, their
# passes and window corrections; scoring migration 0010: score results). It needs STUDY_STATE_OF.
WORK_ROWS_GUARD = _row_guard("work_rows_refuse_when_closed", unless=ERASING)

def shared_work_guard(table: str, column: str) -> str:
    """The trigger of one work table on work_rows_refuse_when_closed, as migration 0034 made it."""
    return (f"DROP TRIGGER IF EXISTS {table}_study_closed ON {table};\n"
            f"CREATE TRIGGER {table}_study_closed BEFORE INSERT OR UPDATE OR DELETE ON {table} FOR EACH ROW "
            f"EXECUTE FUNCTION work_rows_refuse_when_closed('{STUDY_OF[column].format(id='$1')}', '{column}');\n")


# The tables every autosave writes. Their guards are one function each (migration 0040).
AUTOSAVED_TABLES = [table for table in ANNOTATION_TABLES if table[0] in (
    "annotation_annotation", "annotation_correctionpass", "annotation_windowcorrection")]


def table_guard(table: str, column: str) -> str:
    """The work-row guard of one table without derived columns, with its link column and its
    study's lookup written in, and its trigger.

    It refuses and passes what work_rows_refuse_when_closed does, at a quarter of its cost a row
    (0.14 ms there, mostly turning both rows into JSON and a call of study_state_of): the rows
    are compared as rows, and the lookup is this function's own static SQL."""
    function = f"{table}_refuse_when_closed"

    def refuse_if_closed(row: str) -> str:
        # Nested, so that the erasure is looked for only in a closed study.
        return f"""found_state := ({STUDY_OF[column].format(id=f"{row}.{column}")});
        IF found_state IN {CLOSED} THEN
            IF NOT {ERASING} THEN
                RAISE EXCEPTION 'the study is %: {MARK} ({table})', found_state
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;"""

    return f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
DECLARE
    found_state text;
BEGIN
    IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
        RETURN NEW;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        {refuse_if_closed("OLD")}
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.{column} IS DISTINCT FROM OLD.{column}) THEN
        {refuse_if_closed("NEW")}
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS {table}_study_closed ON {table};
CREATE TRIGGER {table}_study_closed BEFORE INSERT OR UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""

POSTGRES_FUNCTIONS = STUDY_STATE_OF + _row_guard("study_rows_refuse_when_closed") + f"""
CREATE OR REPLACE FUNCTION study_closed_refuse_change() RETURNS trigger AS $$
BEGIN
    IF OLD.state IN {CLOSED} AND (to_jsonb(NEW) - 'state') <> (to_jsonb(OLD) - 'state') THEN
        RAISE EXCEPTION 'the study is %: {MARK} (annotation_study)', OLD.state
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION failuremode_refuse_in_use() RETURNS trigger AS $$
DECLARE
    in_question bigint;
BEGIN
    FOREACH in_question IN ARRAY ARRAY[
        CASE WHEN TG_OP <> 'INSERT' THEN OLD.taxonomy_id END,
        CASE WHEN TG_OP <> 'DELETE' THEN NEW.taxonomy_id END
    ] LOOP
        CONTINUE WHEN in_question IS NULL;
        IF EXISTS (SELECT 1 FROM annotation_taxonomyversion t WHERE t.id = in_question AND t.frozen_at IS NOT NULL)
           OR EXISTS (SELECT 1 FROM annotation_study s WHERE s.taxonomy_id = in_question AND s.state <> 'setup') THEN
            RAISE EXCEPTION 'taxonomy version % is in use: its failure modes are frozen', in_question
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


def _postgres_row_trigger(table: str, column: str, derived: tuple[str, ...]) -> str:
    lookup = STUDY_OF[column].format(id="$1")
    arguments = ", ".join(f"'{value}'" for value in (lookup, column, *derived))
    return (f"DROP TRIGGER IF EXISTS {table}_study_closed ON {table};\n"
            f"CREATE TRIGGER {table}_study_closed BEFORE INSERT OR UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION study_rows_refuse_when_closed({arguments});\n")


POSTGRES_STUDY_AND_MODES = """
DROP TRIGGER IF EXISTS study_closed_no_change ON annotation_study;
CREATE TRIGGER study_closed_no_change BEFORE UPDATE ON annotation_study
    FOR EACH ROW EXECUTE FUNCTION study_closed_refuse_change();
DROP TRIGGER IF EXISTS failuremode_in_use ON annotation_failuremode;
CREATE TRIGGER failuremode_in_use BEFORE INSERT OR UPDATE OR DELETE ON annotation_failuremode
    FOR EACH ROW EXECUTE FUNCTION failuremode_refuse_in_use();
"""


def _study_state(column: str, row: str) -> str:
    return "(" + STUDY_OF[column].format(id=f"{row}.{column}") + ")"


def _sqlite_row_triggers(table: str, column: str, derived: tuple[str, ...]) -> list[str]:
    refuse = f"BEGIN SELECT RAISE(ABORT, 'the study is closed or archived: {MARK} ({table})'); END;"
    changed = "1"
    if derived:  # the clip: an update of its derived columns alone passes
        changed = "(" + " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in CLIP_CONTENT_COLUMNS) + ")"
    return [
        f"""CREATE TRIGGER {table}_study_closed_insert BEFORE INSERT ON {table}
    WHEN {_study_state(column, "NEW")} IN {CLOSED} {refuse}""",
        f"""CREATE TRIGGER {table}_study_closed_update BEFORE UPDATE ON {table}
    WHEN {changed} AND ({_study_state(column, "OLD")} IN {CLOSED} OR {_study_state(column, "NEW")} IN {CLOSED})
    {refuse}""",
        f"""CREATE TRIGGER {table}_study_closed_delete BEFORE DELETE ON {table}
    WHEN {_study_state(column, "OLD")} IN {CLOSED} {refuse}""",
    ]


def _mode_in_use(row: str) -> str:
    return (f"(EXISTS (SELECT 1 FROM annotation_taxonomyversion WHERE id = {row}.taxonomy_id "
            f"AND frozen_at IS NOT NULL) OR EXISTS (SELECT 1 FROM annotation_study "
            f"WHERE taxonomy_id = {row}.taxonomy_id AND state <> 'setup'))")


_MODES_REFUSE = "BEGIN SELECT RAISE(ABORT, 'the taxonomy version is in use: its failure modes are frozen'); END;"
SQLITE_STUDY_AND_MODES = [
    f"""CREATE TRIGGER study_closed_no_change BEFORE UPDATE ON annotation_study
    WHEN OLD.state IN {CLOSED} AND ({" OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in STUDY_COLUMNS)})
    BEGIN SELECT RAISE(ABORT, 'the study is closed or archived: {MARK} (annotation_study)'); END;""",
    f"""CREATE TRIGGER failuremode_in_use_insert BEFORE INSERT ON annotation_failuremode
    WHEN {_mode_in_use("NEW")} {_MODES_REFUSE}""",
    f"""CREATE TRIGGER failuremode_in_use_update BEFORE UPDATE ON annotation_failuremode
    WHEN {_mode_in_use("OLD")} OR {_mode_in_use("NEW")} {_MODES_REFUSE}""",
    f"""CREATE TRIGGER failuremode_in_use_delete BEFORE DELETE ON annotation_failuremode
    WHEN {_mode_in_use("OLD")} {_MODES_REFUSE}""",
]
SQLITE_STUDY_AND_MODES_NAMES = [
    "study_closed_no_change", "failuremode_in_use_insert", "failuremode_in_use_update", "failuremode_in_use_delete",
]


def create_rows(schema_editor, tables) -> None:
    """The row triggers of `tables` (ANNOTATION_TABLES or SCORING_TABLES)."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FUNCTIONS, params=None)
        schema_editor.execute("".join(_postgres_row_trigger(*table) for table in tables), params=None)
        return
    for table in tables:
        create_sqlite_for(schema_editor, table[0])


def create_sqlite_for(schema_editor, name: str) -> None:
    """(Again) the SQLite triggers of one table, after a rebuild dropped them."""
    for table in ANNOTATION_TABLES + SCORING_TABLES:
        if table[0] == name:
            for event in ("insert", "update", "delete"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}_study_closed_{event}")
            for statement in _sqlite_row_triggers(*table):
                schema_editor.execute(statement)


def drop_rows(schema_editor, tables) -> None:
    postgres = schema_editor.connection.vendor == "postgresql"
    for table, _, _ in tables:
        if postgres:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_study_closed ON {table}")
        else:
            for event in ("insert", "update", "delete"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_study_closed_{event}")


def create_study_and_modes(schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_FUNCTIONS + POSTGRES_STUDY_AND_MODES, params=None)
        return
    for name in SQLITE_STUDY_AND_MODES_NAMES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in SQLITE_STUDY_AND_MODES:
        schema_editor.execute(statement)


def drop_study_and_modes(schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP TRIGGER IF EXISTS study_closed_no_change ON annotation_study")
        schema_editor.execute("DROP TRIGGER IF EXISTS failuremode_in_use ON annotation_failuremode")
        return
    for name in SQLITE_STUDY_AND_MODES_NAMES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")

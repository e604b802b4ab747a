"""The study lifecycle in the database: a trigger on the study row that refuses changes to the
frozen settings once a study has left setup, and state moves other than setup -> running ->
closed -> archived; each study's own release secret (pseudonyms in data releases); an index
for a person's last action in a study.

The frozen columns and the moves are fixed here on purpose (a migration must not change
meaning later); annotation.services.lifecycle names the same columns for its messages and
tests/annotation/test_lifecycle.py checks the two agree. SQLite rebuilds a table to add most
columns, dropping its triggers: a later migration that changes annotation_study on SQLite calls
`restore_study_triggers` (annotation/migrations/_sqlite_triggers.py) afterwards.
"""

import secrets

from django.db import migrations, models

import annotation.models

FROZEN_COLUMNS = [
    "taxonomy_id", "word_thresholds", "near_total_cut", "length_band", "assignment_design",
    "spread_gap", "assignment_seed", "caption_language",
]
MOVES = [("setup", "running"), ("running", "closed"), ("closed", "archived")]
_MOVES = " OR ".join(f"(OLD.state = '{a}' AND NEW.state = '{b}')" for a, b in MOVES)
# PostgreSQL compares jsonb by value; SQLite keeps JSON as text, which Django writes one way.
_CHANGED_PG = " OR ".join(f"NEW.{c} IS DISTINCT FROM OLD.{c}" for c in FROZEN_COLUMNS)
_CHANGED_SQLITE = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in FROZEN_COLUMNS)

POSTGRES = f"""
CREATE OR REPLACE FUNCTION study_lifecycle_check() RETURNS trigger AS $$
BEGIN
    IF NEW.state <> OLD.state AND NOT ({_MOVES}) THEN
        RAISE EXCEPTION 'illegal move of study %: % -> %', OLD.slug, OLD.state, NEW.state
            USING ERRCODE = 'check_violation';
    END IF;
    IF OLD.state <> 'setup' AND ({_CHANGED_PG}) THEN
        RAISE EXCEPTION 'study % is %: its taxonomy, thresholds and design are frozen',
            OLD.slug, OLD.state USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER study_lifecycle BEFORE UPDATE ON annotation_study
    FOR EACH ROW EXECUTE FUNCTION study_lifecycle_check();
"""

SQLITE = [
    f"""CREATE TRIGGER study_lifecycle_move BEFORE UPDATE OF state ON annotation_study
    WHEN NEW.state <> OLD.state AND NOT ({_MOVES})
    BEGIN SELECT RAISE(ABORT, 'illegal move of study'); END;""",
    f"""CREATE TRIGGER study_lifecycle_frozen BEFORE UPDATE ON annotation_study
    WHEN OLD.state <> 'setup' AND ({_CHANGED_SQLITE})
    BEGIN SELECT RAISE(ABORT, 'study is not in setup: its taxonomy, thresholds and design are frozen'); END;""",
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)
    else:
        for statement in SQLITE:
            schema_editor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP TRIGGER IF EXISTS study_lifecycle ON annotation_study")
    else:
        schema_editor.execute("DROP TRIGGER IF EXISTS study_lifecycle_move")
        schema_editor.execute("DROP TRIGGER IF EXISTS study_lifecycle_frozen")


def give_each_study_its_secret(apps, schema_editor):
    """AddField gave every existing study the same secret; each gets its own."""
    Study = apps.get_model("annotation", "Study")
    for pk in Study.objects.values_list("pk", flat=True):
        Study.objects.filter(pk=pk).update(release_secret=secrets.token_hex(32))


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0017_setup_invitations_and_overlap'),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="release_secret",
            field=models.CharField(default=annotation.models.new_release_secret, editable=False, max_length=64),
        ),
        migrations.RunPython(give_each_study_its_secret, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["study", "actor", "at"], name="audit_last_action_of_actor"),
        ),
        migrations.RunPython(create, drop),
    ]

"""Gold items, practice attempts and qualification (annotation.gold; docs/gold.md).

- ``Annotation.purpose`` says what an annotation is for: ``work`` (every annotation stored
  before), ``gold`` (an expert's gold verdict), ``practice`` (a trainee's attempt at a practice
  item), ``gold_check`` (a hidden gold item in the real queue). ``Annotation.attempt`` numbers a
  practice item's attempts; one annotation per caption, annotator and attempt (was: per caption
  and annotator; every stored row has attempt 1, so nothing stored breaks the new constraint).
- ``GoldItem``: the caption made gold, its gold verdict, who made it, whether it is in the
  practice set. ``Qualification``: an annotator's practice attempts and result in a study.
- The study's settings: whether it requires qualification, the practice set's pass rule, the
  gold rate of hidden checks, the drift threshold; the membership role ``expert``.

The new tables refuse change in a closed or archived study like the study's other rows
(migration 0026). SQLite rebuilds annotation_annotation and annotation_study to add columns,
dropping their triggers: they are put back at the end.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from annotation.migrations import _study_state_triggers as triggers
from annotation.migrations._sqlite_triggers import restore_annotation_triggers, restore_study_triggers

NEW_TABLES = [
    ("annotation_golditem", "study_id", ()),
    ("annotation_qualification", "study_id", ()),
]


# SQLite: the triggers of other tables that name the two rebuilt tables (migration 0026's, scoring
# 0009's) would fail the rebuild's rename; they are kept aside and put back afterwards.
REBUILT = ("annotation_annotation", "annotation_study")
_kept_aside: list[tuple[str, str]] = []


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
        schema_editor.execute(triggers.POSTGRES_FUNCTIONS, params=None)
        schema_editor.execute(
            "".join(triggers._postgres_row_trigger(*table) for table in NEW_TABLES), params=None
        )
        return
    for name, sql in _kept_aside:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
        schema_editor.execute(sql)
    _kept_aside.clear()
    restore_annotation_triggers(apps, schema_editor)
    restore_study_triggers(apps, schema_editor)
    triggers.create_sqlite_for(schema_editor, "annotation_annotation")
    for table in NEW_TABLES:
        for statement in triggers._sqlite_row_triggers(*table):
            schema_editor.execute(statement)


def triggers_drop(apps, schema_editor):
    triggers.drop_rows(schema_editor, NEW_TABLES)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0029_recruitment_links'),
        # Its triggers name annotation_study: they exist before this rebuilds it on SQLite.
        ("scoring", "0009_closed_studies_keep_their_scores"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(sqlite_triggers_aside, migrations.RunPython.noop),
        migrations.CreateModel(
            name='GoldItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('in_practice_set', models.BooleanField(default=False)),
                ('source', models.CharField(default='workspace', max_length=20)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ['study', 'created_at', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='Qualification',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('state', models.CharField(choices=[('not_started', 'not started'), ('practising', 'Practising'), ('passed', 'Passed'), ('failed', 'Failed')], default='not_started', max_length=12)),
                ('attempts', models.PositiveSmallIntegerField(default=0, help_text='practice attempts started')),
                ('attempts_allowed', models.PositiveSmallIntegerField(default=1)),
                ('result', models.JSONField(blank=True, default=dict)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'ordering': ['study', 'user'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='annotation',
            name='annotation_once_per_annotator',
        ),
        migrations.AddField(
            model_name='annotation',
            name='attempt',
            field=models.PositiveSmallIntegerField(default=1, help_text="a practice item's attempt; else 1"),
        ),
        migrations.AddField(
            model_name='annotation',
            name='purpose',
            field=models.CharField(choices=[('work', 'Work'), ('gold', 'Gold'), ('practice', 'Practice'), ('gold_check', 'gold check')], default='work', max_length=12),
        ),
        migrations.AddField(
            model_name='study',
            name='gold_drift_threshold',
            field=models.FloatField(default=0.7),
        ),
        migrations.AddField(
            model_name='study',
            name='gold_rate',
            field=models.FloatField(default=0, help_text='share of queue items that are hidden gold checks (0-0.5)'),
        ),
        migrations.AddField(
            model_name='study',
            name='practice_min_items',
            field=models.PositiveSmallIntegerField(default=5),
        ),
        migrations.AddField(
            model_name='study',
            name='practice_min_mode_f1',
            field=models.FloatField(default=0.5),
        ),
        migrations.AddField(
            model_name='study',
            name='practice_min_overview_agreement',
            field=models.FloatField(default=0.8),
        ),
        migrations.AddField(
            model_name='study',
            name='practice_min_window_agreement',
            field=models.FloatField(default=0.7),
        ),
        migrations.AddField(
            model_name='study',
            name='requires_qualification',
            field=models.BooleanField(default=False, help_text='only annotators who passed the practice set receive real work'),
        ),
        migrations.AlterField(
            model_name='membership',
            name='role',
            field=models.CharField(choices=[('admin', 'study admin'), ('annotator', 'annotator'), ('reviewer', 'QC reviewer'), ('researcher', 'researcher'), ('expert', 'gold expert')], max_length=20),
        ),
        migrations.AddConstraint(
            model_name='annotation',
            constraint=models.UniqueConstraint(fields=('caption', 'annotator', 'attempt'), name='annotation_once_per_annotator_attempt'),
        ),
        migrations.AddConstraint(
            model_name='annotation',
            constraint=models.CheckConstraint(condition=models.Q(('purpose__in', ['work', 'gold', 'practice', 'gold_check'])), name='annotation_purpose_known'),
        ),
        migrations.AddConstraint(
            model_name='annotation',
            constraint=models.CheckConstraint(condition=models.Q(('attempt', 1), models.Q(('attempt__gte', 1), ('purpose', 'practice')), _connector='OR'), name='annotation_attempts_only_for_practice'),
        ),
        migrations.AddConstraint(
            model_name='study',
            constraint=models.CheckConstraint(condition=models.Q(('gold_rate__gte', 0), ('gold_rate__lte', 0.5)), name='study_gold_rate_between_0_and_half'),
        ),
        migrations.AddConstraint(
            model_name='study',
            constraint=models.CheckConstraint(condition=models.Q(('practice_min_overview_agreement__gte', 0), ('practice_min_overview_agreement__lte', 1), ('practice_min_mode_f1__gte', 0), ('practice_min_mode_f1__lte', 1), ('practice_min_window_agreement__gte', 0), ('practice_min_window_agreement__lte', 1), ('gold_drift_threshold__gte', 0), ('gold_drift_threshold__lte', 1)), name='study_practice_rule_shares_between_0_and_1'),
        ),
        migrations.AddField(
            model_name='golditem',
            name='caption',
            field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='gold_item', to='annotation.caption'),
        ),
        migrations.AddField(
            model_name='golditem',
            name='gold',
            field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='gold_item', to='annotation.annotation'),
        ),
        migrations.AddField(
            model_name='golditem',
            name='made_by',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='golditem',
            name='study',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='gold_items', to='annotation.study'),
        ),
        migrations.AddField(
            model_name='qualification',
            name='study',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='qualifications', to='annotation.study'),
        ),
        migrations.AddField(
            model_name='qualification',
            name='user',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='qualifications', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddIndex(
            model_name='golditem',
            index=models.Index(fields=['study', 'in_practice_set'], name='golditem_study_practice'),
        ),
        migrations.AddConstraint(
            model_name='qualification',
            constraint=models.UniqueConstraint(fields=('study', 'user'), name='qualification_once_per_person'),
        ),
        migrations.AddConstraint(
            model_name='qualification',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['not_started', 'practising', 'passed', 'failed'])), name='qualification_state_known'),
        ),
        migrations.AddConstraint(
            model_name='qualification',
            constraint=models.CheckConstraint(condition=models.Q(('attempts__lte', models.F('attempts_allowed'))), name='qualification_attempts_within_allowed'),
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]

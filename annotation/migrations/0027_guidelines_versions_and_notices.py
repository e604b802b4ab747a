"""Guidelines per study: their versions (with failure-mode examples), the notice each person dismissed, and the
guideline version each verdict was given under (issue 29)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0026_closed_studies_and_modes_in_use_refused'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='GuidelineVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('text', models.TextField(blank=True, help_text='Markdown, stored as written, rendered sanitised')),
                ('examples', models.JSONField(blank=True, default=list)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='guideline_versions', to='annotation.study')),
            ],
            options={
                'ordering': ['study', 'number'],
            },
        ),
        migrations.AddField(
            model_name='annotation',
            name='review_guideline_version',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.guidelineversion'),
        ),
        migrations.AddField(
            model_name='correctionpass',
            name='guideline_version',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.guidelineversion'),
        ),
        migrations.CreateModel(
            name='GuidelineNotice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField(help_text='the guideline version dismissed')),
                ('dismissed_at', models.DateTimeField(auto_now=True)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.study')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('study', 'user'), name='guideline_notice_once_per_person')],
            },
        ),
        migrations.AddConstraint(
            model_name='guidelineversion',
            constraint=models.UniqueConstraint(fields=('study', 'number'), name='guideline_version_unique_per_study'),
        ),
        migrations.AddConstraint(
            model_name='guidelineversion',
            constraint=models.CheckConstraint(condition=models.Q(('number__gte', 1)), name='guideline_version_from_1'),
        ),
    ]

"""Start next looks for the person's open practice item first: an index of the practice items
alone, in the order it takes them, so that it no longer reads all of the person's items
(tests/annotation/test_queue_queries.py counts the pages it reads)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0037_study_guards_plan_once'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name='annotation',
            index=models.Index(condition=models.Q(('purpose', 'practice')), fields=['annotator', 'attempt', 'assigned_at', 'id'], name='annotation_practice_queue'),
        ),
    ]

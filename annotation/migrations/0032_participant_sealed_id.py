"""A participant's platform id is kept encrypted beside its keyed hash, for paying them
(annotation.rules.sealed_ids). Participants who joined before have none ("unknown")."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0031_guidelines_of_a_closed_study_refused")]
    operations = [
        migrations.AddField(
            model_name="participant",
            name="pid_sealed",
            field=models.CharField(blank=True, default="", help_text="the platform's participant id, encrypted (for paying)",
                                   max_length=200),
        ),
    ]

from django.db import migrations, models

from annotation.migrations._sqlite_triggers import restore_annotation_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0005_annotation_state_transitions"),
    ]

    operations = [
        migrations.AddField(
            model_name="annotation",
            name="returned_units",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(restore_annotation_triggers, migrations.RunPython.noop),
    ]

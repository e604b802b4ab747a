"""The database refuses a study undo time over an hour, as the setup page, the API and bundle
imports do (annotation.rules.study_settings.UNDO_SECONDS_MAX)."""

from django.db import migrations, models

from annotation.migrations._sqlite_triggers import restore_study_triggers


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0020_ws_window_correction_timeline"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="study",
            constraint=models.CheckConstraint(
                condition=models.Q(("undo_seconds__isnull", True), ("undo_seconds__lte", 3600),
                                   _connector="OR"),
                name="study_undo_seconds_at_most_an_hour",
            ),
        ),
        # SQLite rebuilt the table: its lifecycle triggers are put back.
        migrations.RunPython(restore_study_triggers, migrations.RunPython.noop),
    ]

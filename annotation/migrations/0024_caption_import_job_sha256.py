# A caption import job keeps its file's SHA-256 after the file is removed, so a retried import finds it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0023_amended_windows_reach_timeline'),
    ]

    operations = [
        migrations.AddField(
            model_name='captionimportjob',
            name='sha256',
            field=models.CharField(blank=True, max_length=64),
        ),
    ]

# A caption import job keeps its file's SHA-256 after the file is removed, so a retried import finds it.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0024_active_time_and_segmentation_overlap'),
    ]

    operations = [
        migrations.AddField(
            model_name='captionimportjob',
            name='sha256',
            field=models.CharField(blank=True, max_length=64),
        ),
    ]

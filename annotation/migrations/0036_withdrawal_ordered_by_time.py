"""Withdrawals are listed by when they happened (their own columns), no longer by their study
first: ordering by the study joined the study table into every query of withdrawals."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0035_participant_time_allowed'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='withdrawal',
            options={'ordering': ['at', 'pk']},
        ),
    ]

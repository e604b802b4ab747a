"""Django's session table gets a column of the signed-in person's id (SignedInSession), so that a
request reads its session and its person in one statement (config.sessions, config.auth). The
sessions already open get it from their data; one written later by Django's own store leaves it
empty and is read as before."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def fill_signed_in_ids(apps, schema_editor):
    from django.contrib.auth import SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    sessions = apps.get_model("annotation", "SignedInSession")
    store = SessionStore()
    live = sessions.objects.using(schema_editor.connection.alias).filter(expire_date__gt=timezone.now())
    for key, data in live.values_list("session_key", "session_data").iterator():
        signed_in = str(store.decode(data).get(SESSION_KEY, ""))
        if signed_in.isascii() and signed_in.isdigit() and 0 < int(signed_in) < 2**31:  # as config.sessions
            sessions.objects.using(schema_editor.connection.alias).filter(pk=key).update(user_id=int(signed_in))


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0038_practice_queue_index'),
        ('sessions', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SignedInSession',
            fields=[
                ('session_key', models.CharField(max_length=40, primary_key=True, serialize=False, verbose_name='session key')),
                ('session_data', models.TextField(verbose_name='session data')),
                ('expire_date', models.DateTimeField(db_index=True, verbose_name='expire date')),
                ('user', models.ForeignKey(db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'db_table': 'django_session',
                'managed': False,
            },
        ),
        migrations.RunSQL(
            "ALTER TABLE django_session ADD COLUMN user_id integer NULL",
            reverse_sql="ALTER TABLE django_session DROP COLUMN user_id",
        ),
        migrations.RunPython(fill_signed_in_ids, migrations.RunPython.noop),
    ]

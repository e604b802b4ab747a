"""The Celery application. Workers start with `celery -A config worker`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("redline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The profile export's task lives in scoring/profile_tasks.py, beside the scoring jobs' tasks.py.
app.autodiscover_tasks(related_name="profile_tasks")

"""WSGI entry point: `gunicorn config.wsgi`."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Everything loaded so far (Django, the apps, their modules) lives as long as the process: moved
# out of the garbage collector's generations, the collections that requests' allocations set off
# no longer walk it again and again (about a tenth of a hot request's CPU, bench_request_cpu).
gc.collect()
gc.freeze()

"""The soak: Redline's real stack under simulated people and injected faults (issue 20).

``python -m soak`` (``make soak``) runs it for ten minutes; ``python -m soak --short`` is the
bounded version ``tests/soak/test_soak.py`` runs in ``make test``. Its parts:

- :mod:`soak.stack`: a private PostgreSQL cluster, Redis, gunicorn, Celery workers and a small
  media folder, each started, stopped and broken by the soak alone (never the shared ones);
- :mod:`soak.people`: annotators, reviewers and an admin driving the API over HTTP;
- :mod:`soak.faults`: the faults, each injected several times, and the windows they open;
- :mod:`soak.checks`: the invariants checked afterwards, and the backup and restore;
- :mod:`soak.run`: the whole run and its printed figures.
"""

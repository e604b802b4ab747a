"""After PostgreSQL restarts, the connection a web thread kept (DATABASE_CONN_MAX_AGE) is dead.
The next request must check it (CONN_HEALTH_CHECKS) and reconnect instead of answering 500."""

import psycopg
import pytest
from django.db import close_old_connections, connection

from annotation.models import Study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _terminate(backend_pid: int) -> None:
    """What a restart does to a kept connection: its server process goes away."""
    db = connection.settings_dict
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"], dbname=db["NAME"],
                         autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [backend_pid])


def test_a_request_after_the_servers_connection_died_reconnects(study):
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True
    assert Study.objects.filter(pk=study.pk).exists()
    _terminate(connection.connection.info.backend_pid)
    close_old_connections()  # what Django does when a request starts
    assert Study.objects.filter(pk=study.pk).exists()

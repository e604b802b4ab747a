"""After PostgreSQL restarts, the connection a web thread kept (DATABASE_CONN_MAX_AGE) is dead.
The next request must check it (CONN_HEALTH_CHECKS) and reconnect instead of answering 500."""

from contextlib import contextmanager

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


@contextmanager
def database_down():
    """The database unreachable (its port closed to us), as during an outage."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = closed
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["PORT"] = port


def test_the_api_answers_503_in_json_while_the_database_is_down(client, personas):
    client.force_login(personas["annotator"])
    with database_down():
        response = client.get("/api/studies/")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert "database is not answering" in response.json()["detail"]
    assert response["Retry-After"] == "30"


def test_a_page_answers_503_saying_to_try_again_while_the_database_is_down(client, personas):
    client.force_login(personas["annotator"])
    with database_down():
        response = client.get("/")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    assert "Try again in a minute" in response.content.decode()

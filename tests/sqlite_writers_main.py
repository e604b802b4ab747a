"""Two writers on one SQLite file, as the web server and the worker (or the job threads) are.

Run as a script with DATABASE_URL naming a SQLite file: thread A opens a transaction, reads,
lets thread B commit a write, then writes itself. Prints one JSON line: what each thread got,
and the journal mode and busy timeout of a connection.
"""

from __future__ import annotations

import json
import os
import sys
import threading

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402


def main() -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS counter (name TEXT PRIMARY KEY, value INTEGER)")
        cursor.execute("INSERT OR REPLACE INTO counter VALUES ('a', 0), ('b', 0)")
        cursor.execute("PRAGMA journal_mode")
        journal = cursor.fetchone()[0]
        cursor.execute("PRAGMA busy_timeout")
        busy = cursor.fetchone()[0]
    connection.close()
    a_has_read, b_done = threading.Event(), threading.Event()
    results: dict[str, str] = {}

    def reader_then_writer() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT value FROM counter WHERE name = 'a'")
                value = cursor.fetchone()[0]
                a_has_read.set()
                # B commits now (or, with immediate transactions, waits for this one).
                b_done.wait(timeout=1)
                cursor.execute("UPDATE counter SET value = %s WHERE name = 'a'", [value + 1])
            results["a"] = "ok"
        except Exception as error:  # noqa: BLE001 - reported to the test
            results["a"] = f"{type(error).__name__}: {error}"
        finally:
            a_has_read.set()
            connection.close()

    def writer() -> None:
        a_has_read.wait(timeout=10)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE counter SET value = value + 1 WHERE name = 'b'")
            results["b"] = "ok"
        except Exception as error:  # noqa: BLE001 - reported to the test
            results["b"] = f"{type(error).__name__}: {error}"
        finally:
            b_done.set()
            connection.close()

    threads = [threading.Thread(target=reader_then_writer), threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, value FROM counter ORDER BY name")
        values = dict(cursor.fetchall())
    print(json.dumps({"results": results, "values": values, "journal_mode": journal,
                      "busy_timeout_ms": busy}))


if __name__ == "__main__":
    main()

"""A crowd launch on the production layout: many participants arrive within minutes, load the
pages and their static files as a browser does, then work with realistic think time.

Standalone (`make bench` runs the short form): ``.venv/bin/python bench/bench_crowd_launch.py``
(40 participants arriving over 30 s, each working for 90 s, so that each submits an item); the full form of issue 33 is
``.venv/bin/python bench/bench_crowd_launch.py --full`` (500 participants over 5 minutes, 10
minutes of work each: about 17 minutes with the build); ``--participants``, ``--arrival`` and
``--work`` (seconds) set any other size.

The stack, as docs/production.md runs it, on this machine: gunicorn (``--workers 4``, sync
workers, DEBUG off, static files collected and served by WhiteNoise), PostgreSQL (a scratch
database of its own, ``redline_crowd_bench`` on 127.0.0.1:5432 unless ``--database-url``),
Redis as broker and cache (``--redis``, default database 6 of 127.0.0.1:6379) and one Celery
worker; gunicorn and the worker are started by the soak's own code (soak/stack.py) with the
soak's production settings (soak/run.py's ``service_env``).

The study: one clip row per five captions (no video files: the page's video and poster are not
fetched; bench_light_web.py measures the video start), 6 windows a caption (a tenth more than
the participants' quotas need), a few QC reviewers (invited accounts, signed in by session).
The participants arrive as crowd participants do (``--sign-in link``, the default): the study
has a recruitment link (its cap the participants, its quota ``--quota`` items each, by default
what the work time allows) and a consent text (which the QC reviewers accepted beforehand), and
each participant, as the browser does:

0. opens the link with its own Prolific-style ids (``GET /join/<token>/?PROLIFIC_PID=...&
   STUDY_ID=...&SESSION_ID=...``: the landing page, showing the consent, with its static files),
   reads for 3 s and accepts (the page's form posted: its CSRF token, the ids, the consent
   version and ``answer=accept``; the server makes the account, gives the quota and signs the
   participant in), and follows the redirect to its queue page; when its quota is submitted it
   loads the completion page (``/studies/<slug>/done/``, the code) and leaves.

Every open of a link counts against the address, and all participants come from 127.0.0.1: the
bench's server gets RECRUITMENT_OPENS_PER_ADDRESS raised to what the run needs (said in the
output). With ``--sign-in session`` or ``--sign-in form`` the participants are invited accounts
instead, every caption assigned beforehand (enough for the whole run), signed in through
Django's session machinery or through the real sign-in form (the login page, then the form
posted with its CSRF token; every sign-in hashes the password, PBKDF2, on the server), who open
the study's entry page (``/studies/<slug>/``) before their queue page. Then, in both ways:

1. the queue page with its static files, then "start next"
   (``POST /api/studies/<slug>/my-queue/next/``);
2. opens the workspace page with all of its static files: the page is parsed for its scripts,
   styles, icon, module preloads and import map, and every ES module's static imports are
   followed through the import map, as the browser resolves them. The browser's cache is
   simulated per participant: a response is reused without a request while fresh
   (``Cache-Control: max-age``, ``immutable``), revalidated with ``If-None-Match`` /
   ``If-Modified-Since`` once stale (a 304 counts as a request and its bytes), and refetched
   when it has no validator; so the first (cold) and the later (warm) workspace loads count
   their own requests and bytes. Then the page's own ``POST .../open/``;
3. works on the item: an autosave (``PATCH .../draft/``) every 5 s while editing (the overview
   typed in three saves, the overview locked, each window judged, the segmentation), then the
   submit, then "start next" and the next workspace page: about one item a minute;
4. QC reviewers (one per 25 participants) claim the next item (``review-queue/next``), open the
   review page, read for 20 s and approve it (each approval queues its scoring for the worker).

Think times are jittered (0.7 to 1.3 times). It prints p50/p95/p99 per request kind, the errors
by status, the requests per second against what think time alone allows, the server's CPU
(gunicorn, the Celery worker and the PostgreSQL backends of the database, from /proc) per
request and in cores, their resident memory, and the cold and warm workspace loads. Targets
(issue 33): 0 errors, p95 under 200 ms for saves, "start next" and page loads. The load average
is printed at the start and the end: the machine is shared, and the load generator runs on it
too (its own CPU time is printed).
"""

from __future__ import annotations

import argparse
import getpass
import gzip
import http.client
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode, urljoin, urlsplit

from benchlib import HOST, cpu_seconds, free_port, percentile, signed_in_session

SLUG = "crowd"
PASSWORD = "crowd-bench-password"  # noqa: S105 - a scratch database's accounts
SHORT = {"participants": 40, "arrival": 30.0, "work": 90.0}
FULL = {"participants": 500, "arrival": 300.0, "work": 600.0}
AUTOSAVE_SECONDS = 5.0
WINDOWS = 6
REVIEW_SECONDS = 20.0
TARGET_P95_MS = 200.0
# The request kinds whose p95 the target names.
TARGETED = ("entry page", "queue page", "workspace page", "review page", "start next", "autosave", "submit",
            "lock overview", "sign in", "landing page", "consent accept", "completion page")
ITEM_SECONDS = 75.0  # an item with think time and page loads: the default quota is the work time's items
PARTICIPANT_ID = "PROLIFIC_PID"
STATIC_PREFIX = "/static/"


# --- what a browser does with a page and its cache (pure; tests/test_bench_crowd_launch.py) ---


class Assets(HTMLParser):
    """A page's subresources in document order: scripts, styles, the icon, module preloads, and
    its import map (``{"imports": {...}}``)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.modules: set[str] = set()
        self.import_map: dict[str, str] = {}
        self._in_map = False
        self._map_text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            if a.get("type") == "importmap":
                self._in_map = True
            elif a.get("src"):
                self.urls.append(a["src"])
                if a.get("type") == "module":
                    self.modules.add(a["src"])
        elif tag == "link" and a.get("href"):
            rel = set((a.get("rel") or "").lower().split())
            if rel & {"stylesheet", "icon", "modulepreload", "preload"}:
                self.urls.append(a["href"])
                if "modulepreload" in rel:
                    self.modules.add(a["href"])

    def handle_endtag(self, tag):
        if tag == "script" and self._in_map:
            self._in_map = False
            self.import_map.update(json.loads("".join(self._map_text) or "{}").get("imports", {}))
            self._map_text = []

    def handle_data(self, data):
        if self._in_map:
            self._map_text.append(data)


def page_assets(html: str) -> Assets:
    parser = Assets()
    parser.feed(html)
    return parser


# Static imports and re-exports of an ES module: `import x from "./a.js"`, `import "./b.js"`,
# `export { y } from "./c.js"`. Dynamic import() runs only when code does: not followed.
IMPORTS = re.compile(r"""(?:^|[;\n}])\s*(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?["']([^"']+)["']""")


FORM = re.compile(r'<form\b[^>]*\bid="([^"]+)"[^>]*>(.*?)</form>', re.S)
FIELD = re.compile(r'<input\b[^>]*\bname="([^"]+)"[^>]*\bvalue="([^"]*)"')


def form_fields(html: str, form_id: str) -> dict[str, str] | None:
    """The named inputs (hidden fields, the CSRF token) of the form with id `form_id`, their values
    unescaped, as the browser posts them; None when the page has no such form."""
    from html import unescape

    for found_id, body in FORM.findall(html):
        if found_id == form_id:
            return {name: unescape(value) for name, value in FIELD.findall(body)}
    return None


def default_quota(work: float) -> int:
    """The items a participant can submit in `work` seconds (at least one)."""
    return max(1, int(work // ITEM_SECONDS))


def module_imports(source: str, module_url: str, import_map: dict[str, str]) -> list[str]:
    """The URLs a module's static imports load: each specifier resolved against the module's own
    URL, then looked up in the page's import map (as the browser does)."""
    found = []
    for specifier in IMPORTS.findall(source):
        if not specifier.startswith(("./", "../", "/")):
            continue
        url = urljoin(module_url, specifier)
        found.append(import_map.get(url, url))
    return found


@dataclass
class Cached:
    """One response in a participant's browser cache."""

    fresh_until: float  # time.monotonic() until which it is used without a request
    etag: str = ""
    last_modified: str = ""


def caching(headers: dict[str, str], now: float) -> Cached | None:
    """What a browser keeps of a 200 answer, by its headers; None when it may not be stored or has
    neither freshness nor a validator (fetched again next time)."""
    control = {part.strip().split("=", 1)[0].lower(): (part.split("=", 1)[1].strip() if "=" in part else "")
               for part in headers.get("cache-control", "").split(",") if part.strip()}
    if "no-store" in control:
        return None
    max_age = 0.0
    if "max-age" in control and "no-cache" not in control:
        try:
            max_age = float(control["max-age"])
        except ValueError:
            max_age = 0.0
    etag, modified = headers.get("etag", ""), headers.get("last-modified", "")
    if max_age <= 0 and not etag and not modified:
        return None
    return Cached(now + max_age, etag, modified)


# --- the participants --------------------------------------------------------------------------


@dataclass
class Answer:
    kind: str
    status: int
    seconds: float
    received: int  # bytes: status line, headers and body as sent (compressed where it was)
    started: float


@dataclass
class Load:
    """One page view: the page and its subresources over the network."""

    page: str
    cold: bool
    requests: int = 0
    received: int = 0
    revalidated: int = 0
    from_cache: int = 0


@dataclass
class Ledger:
    answers: list[Answer] = field(default_factory=list)
    loads: list[Load] = field(default_factory=list)
    problems: Counter = field(default_factory=Counter)
    items_done: Counter = field(default_factory=Counter)  # participant -> items submitted
    completed: int = 0  # participants who saw their completion page with its code
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)


# Bodies of static files, shared by every participant's cache (the same bytes for all).
BODIES: dict[str, bytes] = {}
IDLE_SECONDS = 1.5  # gunicorn's keep-alive is 2 s; an older connection is closed by now


class Browser:
    """One participant's connection, cookies and cache."""

    def __init__(self, port: int, ledger: Ledger, cookies: dict[str, str]):
        self.port, self.ledger, self.cookies = port, ledger, dict(cookies)
        self.connection = http.client.HTTPConnection(HOST, port, timeout=120)
        self.cache: dict[str, Cached] = {}
        self.seen_pages: set[str] = set()
        self.last = time.monotonic()

    def request(self, kind: str, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        sent = {"Host": f"{HOST}:{self.port}", "Accept-Encoding": "gzip, deflate, br",
                "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
        if method not in ("GET", "HEAD"):
            sent.setdefault("X-CSRFToken", self.cookies.get("csrftoken", ""))
            sent.setdefault("Referer", f"http://{HOST}:{self.port}/")
        started = time.monotonic()
        status, answer_headers, raw, size = 0, {}, b"", 0
        try:
            if started - self.last > IDLE_SECONDS:
                self.connection.close()
            self.connection.request(method, path, body, sent)
            response = self.connection.getresponse()
            raw = response.read()
            status = response.status
            answer_headers = {k.lower(): v for k, v in response.getheaders()}
            size = len(raw) + sum(len(k) + len(v) + 4 for k, v in response.getheaders()) + 17
            for value in response.msg.get_all("Set-Cookie") or []:
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        except (OSError, http.client.HTTPException) as exc:
            self.connection.close()
            self.ledger.problems[f"{kind}: {type(exc).__name__}"] += 1
        self.last = time.monotonic()
        self.ledger.add(Answer(kind, status, self.last - started, size, started))
        encoding = answer_headers.get("content-encoding", "")
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        return status, answer_headers, raw

    def json(self, kind: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        status, _, raw = self.request(kind, method, path, data, {"Content-Type": "application/json",
                                                                 "Accept": "application/json"})
        try:
            return status, json.loads(raw) if raw[:1] in (b"{", b"[") else {}
        except ValueError:
            return status, {}

    def asset(self, url: str, load: Load) -> bytes | None:
        """A subresource, from the cache while fresh, else over the network (conditionally when
        the cache has a validator); its body."""
        now = time.monotonic()
        cached = self.cache.get(url)
        if cached is not None and cached.fresh_until > now and url in BODIES:
            load.from_cache += 1
            return BODIES[url]
        headers = {}
        if cached is not None and cached.etag:
            headers["If-None-Match"] = cached.etag
        if cached is not None and cached.last_modified:
            headers["If-Modified-Since"] = cached.last_modified
        before = len(self.ledger.answers)
        status, answer_headers, raw = self.request("static", "GET", url, headers=headers)
        load.requests += 1
        load.received += self.ledger.answers[before].received if len(self.ledger.answers) > before else 0
        if status == 304 and cached is not None:
            load.revalidated += 1
            refreshed = caching(answer_headers, time.monotonic())
            if refreshed is not None:
                self.cache[url] = Cached(refreshed.fresh_until, refreshed.etag or cached.etag,
                                         refreshed.last_modified or cached.last_modified)
            return BODIES.get(url)
        if status != 200:
            return None
        BODIES.setdefault(url, raw)
        kept = caching(answer_headers, time.monotonic())
        if kept is not None:
            self.cache[url] = kept
        else:
            self.cache.pop(url, None)
        return raw

    def page(self, kind: str, path: str) -> tuple[int, str]:
        """A page view: the page, then its subresources and the modules they import. The first
        view of a kind of page is its cold load (what the earlier pages cached is reused)."""
        load = Load(kind, cold=kind not in self.seen_pages)
        self.seen_pages.add(kind)
        before = len(self.ledger.answers)
        status, _, raw = self.request(kind, "GET", path, headers={"Accept": "text/html"})
        load.requests += 1
        load.received += self.ledger.answers[before].received
        html = raw.decode("utf-8", "replace")
        if status == 200:
            found = page_assets(html)
            waiting = [urljoin(path, url) for url in found.urls]
            modules = {urljoin(path, url) for url in found.modules}
            seen: set[str] = set()
            while waiting:
                url = waiting.pop(0)
                if url in seen or not urlsplit(url).path.startswith(STATIC_PREFIX):
                    continue
                seen.add(url)
                body = self.asset(url, load)
                if body is not None and url.endswith(".js") and (url in modules or "frontend/" in url):
                    for imported in module_imports(body.decode("utf-8", "replace"), url, found.import_map):
                        modules.add(imported)
                        waiting.append(imported)
        with self.ledger.lock:
            self.ledger.loads.append(load)
        return status, html


class Participant(threading.Thread):
    """Arrives, signs in, opens the entry and queue pages, then works item after item."""

    def __init__(self, number: int, port: int, ledger: Ledger, arrive: float, leave: float, sign_in: dict,
                 seed: int):
        super().__init__(name=f"participant-{number}", daemon=True)
        self.number, self.ledger, self.arrive, self.leave = number, ledger, arrive, leave
        self.sign_in = sign_in
        self.random = random.Random(seed)
        self.browser = Browser(port, ledger, sign_in.get("cookies", {}))

    def pause(self, seconds: float) -> bool:
        """Think for about `seconds`; False once this participant's time is over."""
        wait = seconds * self.random.uniform(0.7, 1.3)
        if time.monotonic() + wait > self.leave:
            time.sleep(max(0.0, self.leave - time.monotonic()))
            return False
        time.sleep(wait)
        return True

    def run(self) -> None:
        time.sleep(max(0.0, self.arrive - time.monotonic()))
        try:
            self.work()
        except Exception as exc:  # noqa: BLE001 - a broken participant is reported, not fatal
            self.ledger.problems[f"participant error: {type(exc).__name__}: {exc}"[:160]] += 1

    def joined(self) -> bool:
        """Through the recruitment link: the landing page, the consent accepted, the redirect to
        the queue page followed."""
        b = self.browser
        path = self.sign_in["link"]
        status, html = b.page("landing page", path)
        fields = form_fields(html, "consent-form") if status == 200 else None
        if fields is None:
            self.ledger.problems[f"landing page answered {status}{'' if status != 200 else ' without consent'}"] += 1
            return False
        if not self.pause(3):
            return False
        form = urlencode({**fields, "answer": "accept"}).encode()
        status, headers, _ = b.request("consent accept", "POST", urlsplit(path).path, form,
                                       {"Content-Type": "application/x-www-form-urlencoded"})
        where = urlsplit(headers.get("location", "")).path
        if status != 302 or not where:
            self.ledger.problems[f"consent accept answered {status}"] += 1
            return False
        b.page("queue page", where)
        return True

    def signed_in(self) -> bool:
        b = self.browser
        if "link" in self.sign_in:
            return self.joined()
        if "username" not in self.sign_in:
            return True
        status, html = b.page("login page", "/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        if status != 200 or token is None:
            return False
        form = (f"csrfmiddlewaretoken={token.group(1)}&username={self.sign_in['username']}"
                f"&password={PASSWORD}&next=/studies/{SLUG}/").encode()
        status, _, _ = b.request("sign in", "POST", "/login/", form,
                                 {"Content-Type": "application/x-www-form-urlencoded"})
        return status == 302

    def work(self) -> None:
        b = self.browser
        if not self.signed_in():
            self.ledger.problems["sign-in failed"] += 1
            return
        if "link" not in self.sign_in:
            b.page("entry page", f"/studies/{SLUG}/")
            if not self.pause(3):
                return
            b.page("queue page", f"/studies/{SLUG}/queue/")
        if not self.pause(2):
            return
        quota = self.sign_in.get("quota")
        while time.monotonic() < self.leave:
            if quota is not None and self.ledger.items_done[self.number] >= quota:
                status, html = b.page("completion page", f"/studies/{SLUG}/done/")
                if status == 200 and 'id="completion-code"' in html:
                    with self.ledger.lock:
                        self.ledger.completed += 1
                else:
                    self.ledger.problems[f"completion page answered {status}"] += 1
                return
            status, answer = b.json("start next", "POST", f"/api/studies/{SLUG}/my-queue/next/")
            if status != 200:
                self.ledger.problems[f"start next answered {status}"] += 1
                if not self.pause(10):
                    return
                continue
            if not self.item(answer["id"]):
                return

    def item(self, pk: int) -> bool:
        """One item, from its workspace page to its submit; False once time is over."""
        b = self.browser
        status, html = b.page("workspace page", f"/annotate/{pk}/")
        payload = re.search(r'<script id="workspace-data" type="application/json">(.*?)</script>', html, re.S)
        if status != 200 or payload is None:
            self.ledger.problems[f"workspace page answered {status}"] += 1
            return self.pause(10)
        data = json.loads(payload.group(1))
        version = data["payload"]["version"] if "payload" in data else data["version"]
        b.json("open", "POST", f"/api/annotations/{pk}/open/")

        def save(kind: str, path: str, body: dict) -> bool:
            nonlocal version
            if not self.pause(AUTOSAVE_SECONDS):
                return False
            status, answer = b.json(kind, path.split()[0], path.split()[1], {"base_version": version, **body})
            if status != 200:
                self.ledger.problems[f"{kind} answered {status}"] += 1
                return False
            version = answer["version"]
            return True

        draft = f"PATCH /api/annotations/{pk}/draft/"
        text = "A person crosses the street"
        for words in (" while traffic waits", " and the camera follows", " from the pavement."):
            text += words
            change = {"overview": {"text": text, "verdict": "reject", "modes": ["omission"]}}
            if not save("autosave", draft, {"changes": {**change, "active_seconds": 5}}):
                return time.monotonic() < self.leave
        if not save("lock overview", f"POST /api/annotations/{pk}/lock-overview/", {}):
            return time.monotonic() < self.leave
        for index in range(WINDOWS):
            change = ({"index": index, "verdict": "accept"} if self.random.random() < 0.7 else
                      {"index": index, "verdict": "reject", "modes": ["factual"], "scene": "A bus arrives."})
            if not save("autosave", draft, {"changes": {"windows": [change], "active_seconds": 5}}):
                return time.monotonic() < self.leave
        if not save("autosave", draft, {"changes": {"segmentation": {"verdict": "accept"}, "active_seconds": 5}}):
            return time.monotonic() < self.leave
        if not save("submit", f"POST /api/annotations/{pk}/submit/", {"replies": {}}):
            return time.monotonic() < self.leave
        with self.ledger.lock:
            self.ledger.items_done[self.number] += 1
        return self.pause(2)


class Reviewer(Participant):
    """Claims the next item for QC, opens its review page, reads, approves."""

    def work(self) -> None:
        b = self.browser
        if not self.signed_in():
            self.ledger.problems["sign-in failed"] += 1
            return
        while time.monotonic() < self.leave:
            status, answer = b.json("review next", "POST", f"/api/studies/{SLUG}/review-queue/next/", {})
            if status != 200:
                if status != 404:
                    self.ledger.problems[f"review next answered {status}"] += 1
                if not self.pause(REVIEW_SECONDS):
                    return
                continue
            b.page("review page", f"/review/{answer['id']}/")
            if not self.pause(REVIEW_SECONDS):
                return
            status, _ = b.json("approve", "POST", f"/api/annotations/{answer['id']}/approve/", {})
            if status != 200:
                self.ledger.problems[f"approve answered {status}"] += 1


# --- the server's processes ----------------------------------------------------------------------


class Sampler(threading.Thread):
    """Every 2 s: the CPU time of gunicorn's processes, the Celery worker and the database's
    PostgreSQL backends (per process, so that a backend that comes and goes still counts), their
    resident memory, and the load average."""

    def __init__(self, groups, database: str, database_url: str):
        super().__init__(name="sampler", daemon=True)
        self.groups, self.database, self.database_url = groups, database, database_url
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.group_of: dict[int, str] = {}
        self.rss: dict[str, float] = defaultdict(float)  # the largest resident set seen, per process kind
        self.loads: list[float] = []
        self.stop = threading.Event()

    def backends(self, connection) -> list[int]:
        try:
            rows = connection.execute("select pid from pg_stat_activity where datname = %s and pid <> pg_backend_pid()",
                                      (self.database,)).fetchall()
            return [row[0] for row in rows]
        except Exception:  # noqa: BLE001 - one missed sample
            return []

    def sample(self, connection, started: bool = False) -> None:
        pids = {pid: group for group, find in self.groups.items() for pid in find()}
        pids.update({pid: "database" for pid in self.backends(connection)})
        for pid, group in pids.items():
            spent = cpu_seconds([pid])
            if pid not in self.first:
                # A process there at the start counts from now; one started since, from its start.
                self.first[pid] = spent if started else 0.0
            self.last[pid] = max(spent, self.last.get(pid, 0.0))
            self.group_of[pid] = group
            if group != "database":
                kind = "web worker" if group == "web" else group
                self.rss[kind] = max(self.rss[kind], rss_mb(pid))
        self.loads.append(os.getloadavg()[0])

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as connection:
            self.sample(connection, started=True)
            while not self.stop.wait(2.0):
                self.sample(connection)
            self.sample(connection)

    def cpu(self) -> dict[str, float]:
        spent: dict[str, float] = defaultdict(float)
        for pid, last in self.last.items():
            spent[self.group_of[pid]] += last - self.first[pid]
        return dict(spent)


def rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024
    except (OSError, IndexError, ValueError):
        return 0.0


# --- building and running ---------------------------------------------------------------------------


def scratch_database(url: str) -> bool:
    """Drop and create the database `url` names (on its server); False when that server cannot
    be reached."""
    import psycopg

    base, _, name = url.rpartition("/")
    try:
        with psycopg.connect(f"{base}/postgres", autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        print(f"crowd launch bench: skipped, cannot create {name}: {exc}".strip())
        return False
    return True


def drop_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def build(participants: int, items_each: int, reviewers: int, sign_in: str) -> tuple[list[dict], list[dict], dict]:
    """Migrate, collect the static files, build the study; each participant's and reviewer's
    way in (the recruitment link with the participant's ids and the quota, a session cookie, or
    the user name for the sign-in form). With the link, `items_each` is its quota, the captions
    are left free for the link to give, and the study has a consent text."""
    import django

    django.setup()
    import scalebuild
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command
    from django.db import connections
    from django.utils.crypto import get_random_string

    began = time.monotonic()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    migrated = time.monotonic()
    models = 5
    link = sign_in == "link"
    # A link's joins draw from the free captions: a tenth more than the quotas need.
    clips = -(-participants * items_each * (11 if link else 10) // (10 * models))
    built = scalebuild.build(slug=SLUG, clips=clips, models=models, windows=WINDOWS,
                             annotators=0 if link else participants,
                             reviewers=reviewers, overlap=0.0, submitted_share=0.0, say=lambda *a, **k: None)
    people = [*built.annotators, *built.reviewers]
    from django.db.models import Count

    from annotation.models import Annotation

    assigned = dict(Annotation.objects.filter(caption__clip__study=built.study).values_list("annotator")
                    .annotate(n=Count("pk")).values_list("annotator", "n"))
    each = [assigned.get(person.pk, 0) for person in built.annotators] or [items_each]
    # Invited accounts with a password (hashed once: every account has the same one).
    get_user_model().objects.filter(pk__in=[p.pk for p in people]).update(password=make_password(PASSWORD))
    ways = []
    if link:
        from annotation.services.consent import consent_asked, consent_record, consent_save
        from annotation.services.recruitment import recruitment_link_create

        consent_save(study=built.study, actor=built.admin, text=CONSENT)
        # The QC reviewers (invited staff) accepted it on their own page before the launch.
        version = consent_asked(built.study)
        for person in built.reviewers:
            consent_record(study=built.study, user=person, version=version.number if version else None)
        _, token = recruitment_link_create(study=built.study, actor=built.admin, cap=participants, quota=items_each)
        for number in range(participants):
            query = urlencode({PARTICIPANT_ID: f"5f{number:022x}", "STUDY_ID": "65a0c0ffee0000000000bench",
                               "SESSION_ID": f"se{number:022x}"})
            ways.append({"link": f"/join/{token}/?{query}", "quota": items_each})
    for person in people:
        person.refresh_from_db()
        if sign_in == "form":
            ways.append({"username": person.username, "cookies": {}})
        else:
            ways.append({"cookies": {settings.SESSION_COOKIE_NAME: signed_in_session(person),
                                     settings.CSRF_COOKIE_NAME: get_random_string(32)}})
    figures = {"operator": {settings.SESSION_COOKIE_NAME: signed_in_session(built.admin),
                            settings.CSRF_COOKIE_NAME: get_random_string(32)},
               "captions": built.captions, "annotations": built.annotations, "clips": clips,
               "assigned": (min(each), max(each)),
               "migrate seconds": migrated - began, "build seconds": time.monotonic() - migrated}
    connections.close_all()
    return ways[:participants], ways[participants:], figures


CONSENT = """# Taking part

You will check and correct captions of short videos. Your platform id is not stored; you may
stop at any time. Your corrections are kept for research, under a pseudonym.
"""


def warm_up(port: int, cookies: dict[str, str], workers: int) -> None:
    """What the operator does before sending the link: open the study page and the review queue, a
    few times at once so that every web worker has answered once (its first request loads templates
    and opens its database connection). Not measured."""
    def views() -> None:
        browser = Browser(port, Ledger(), cookies)
        for path in (f"/studies/{SLUG}/", f"/studies/{SLUG}/review/"):
            browser.request("warm-up", "GET", path)

    threads = [threading.Thread(target=views) for _ in range(2 * workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def quiet(pids, seconds: float = 90) -> None:
    """Wait until these processes are idle (under 0.05 s of CPU in a second): the Celery worker
    and gunicorn's workers have finished starting."""
    deadline = time.monotonic() + seconds
    before = cpu_seconds(pids())
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(pids())
        if now - before < 0.05:
            return
        before = now


class SharedService:
    """The shared PostgreSQL or Redis, shaped as soak.run.service_env expects the soak's own."""

    def __init__(self, url: str):
        self._url = url

    def url(self, *_: object) -> str:
        return self._url


def failed(answer: Answer) -> bool:
    """An error: no answer, or a 4xx/5xx other than "nothing is waiting for review" (404)."""
    return not (200 <= answer.status < 400) and not (answer.kind == "review next" and answer.status == 404)


def describe_load(loads: list[Load]) -> str:
    if not loads:
        return "none"
    requests = statistics.median(load.requests for load in loads)
    received = statistics.median(load.received for load in loads)
    revalidated = statistics.median(load.revalidated for load in loads)
    cached = statistics.median(load.from_cache for load in loads)
    return (f"{requests:.0f} requests, {received / 1024:.1f} KiB ({revalidated:.0f} revalidated with a 304, "
            f"{cached:.0f} from the cache without a request; median of {len(loads)})")


def report(ledger: Ledger, sampler: Sampler, options: dict, seconds: float, client_cpu: float) -> int:
    answers = ledger.answers
    by_kind: dict[str, list[Answer]] = defaultdict(list)
    for answer in answers:
        by_kind[answer.kind].append(answer)
    print(f"\n{len(answers):,} requests in {seconds:.0f} s ({len(answers) / seconds:.1f}/s)")
    print(f"  {'kind':<16} {'count':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7}  target")
    missed = []
    for kind in sorted(by_kind, key=lambda k: -len(by_kind[k])):
        items = by_kind[kind]
        ms = [a.seconds * 1000 for a in items]
        errors = sum(1 for a in items if failed(a))
        p95 = percentile(ms, 0.95)
        mark = ""
        if kind in TARGETED:
            mark = f"p95 {'ok' if p95 < TARGET_P95_MS else 'over'} {TARGET_P95_MS:g} ms"
            if p95 >= TARGET_P95_MS:
                missed.append(kind)
        print(f"  {kind:<16} {len(items):>7,} {percentile(ms, 0.5):>8.1f} {p95:>8.1f} {percentile(ms, 0.99):>8.1f} "
              f"{max(ms):>8.1f} {errors:>7}  {mark}")
    statuses = Counter(a.status for a in answers)
    errors = dict(Counter(a.status for a in answers if failed(a)))
    print(f"answers by status: {dict(sorted(statuses.items()))}; errors (status 0: no answer; a 404 of review "
          f"next is \"nothing waiting\", not an error): "
          f"{sum(errors.values())} {dict(sorted(errors.items())) if errors else ''}")
    if ledger.problems:
        print(f"what went wrong for the participants: {dict(ledger.problems.most_common(12))}")
    items = sum(ledger.items_done.values())
    participant_minutes = options["participants"] * options["work"] / 60
    if options.get("quota"):
        print(f"participants who reached their completion page (quota {options['quota']} item(s)): "
              f"{ledger.completed} of {options['participants']} (one who finishes early leaves: fewer "
              f"participant-minutes at work than the rate below counts)")
    saves = len(by_kind.get("autosave", []))
    print(f"items submitted: {items:,} ({items / participant_minutes:.2f} a participant-minute; think time alone "
          f"allows about {60 / (AUTOSAVE_SECONDS * (WINDOWS + 6) + 4):.2f}); autosaves {saves:,} "
          f"({saves / participant_minutes:.1f} a participant-minute, think time alone about "
          f"{60 / AUTOSAVE_SECONDS * (WINDOWS + 4) / (WINDOWS + 6):.1f})")
    cpu = sampler.cpu()
    total = sum(cpu.values())
    print(f"server CPU: {total:.1f} s in all, {total / seconds:.2f} cores on average, "
          f"{total / max(1, len(answers)) * 1000:.1f} ms a request (every request, static files included); "
          + ", ".join(f"{group} {spent:.1f} s" for group, spent in sorted(cpu.items())))
    dynamic = [a for a in answers if a.kind != "static"]
    print(f"  per request that is not a static file: {total / max(1, len(dynamic)) * 1000:.1f} ms "
          f"({len(dynamic):,} requests)")
    print("resident memory, the largest seen: " + ", ".join(f"{kind} {mb:.0f} MB" for kind, mb in sampler.rss.items()))
    for page in ("landing page", "workspace page", "entry page", "queue page", "completion page", "review page",
                 "login page"):
        loads = [load for load in ledger.loads if load.page == page]
        if loads:
            print(f"{page}, first view: {describe_load([ld for ld in loads if ld.cold])}")
            print(f"{page}, later views: {describe_load([ld for ld in loads if not ld.cold])}")
    loads = sampler.loads or [0.0]
    print(f"load average (1 min) during the run: {min(loads):.1f} to {max(loads):.1f}, median "
          f"{statistics.median(loads):.1f}, on {os.cpu_count()} CPUs; the load generator itself used "
          f"{client_cpu:.1f} s of CPU")
    verdict = "met" if not errors and not missed else (
        f"not met: {sum(errors.values())} errors" + (f", p95 over {TARGET_P95_MS:g} ms for {', '.join(missed)}"
                                                     if missed else ""))
    print(f"target (0 errors, p95 under {TARGET_P95_MS:g} ms for page loads, saves and start next): {verdict}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true",
                        help="issue 33's size: 500 participants over 300 s, 600 s of work")
    parser.add_argument("--participants", type=int,
                        help=f"participants ({SHORT['participants']}; --full {FULL['participants']})")
    parser.add_argument("--arrival", type=float, help=f"seconds over which they arrive ({SHORT['arrival']:g})")
    parser.add_argument("--work", type=float, help=f"seconds each works after arriving ({SHORT['work']:g})")
    parser.add_argument("--sign-in", choices=("link", "session", "form"), default="link",
                        help="the recruitment link with its consent (link), or invited accounts: a session made by "
                             "Django's session machinery (session) or the sign-in form (form)")
    parser.add_argument("--quota", type=int, help="the link's items a participant (what the work time allows: "
                                                  f"one per {ITEM_SECONDS:g} s, at least 1)")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (4, as docs/production.md)")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker (1: sync workers)")
    parser.add_argument("--database-url", default=os.environ.get(
        "CROWD_BENCH_DATABASE_URL", f"postgres://{getpass.getuser()}@{HOST}:5432/redline_crowd_bench"),
        help="the scratch database, dropped and created (CROWD_BENCH_DATABASE_URL)")
    parser.add_argument("--redis", default=os.environ.get("CROWD_BENCH_REDIS_URL", f"redis://{HOST}:6379/6"),
                        help="broker and cache (CROWD_BENCH_REDIS_URL, default database 6)")
    args = parser.parse_args(argv)
    options = dict(FULL if args.full else SHORT)
    for name in ("participants", "arrival", "work"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    import redis

    try:
        redis.Redis.from_url(args.redis, socket_timeout=3).ping()
    except redis.RedisError as exc:
        print(f"crowd launch bench: skipped, no Redis at {args.redis}: {exc}")
        return 0
    if not scratch_database(args.database_url):
        return 0
    from soak.run import service_env
    from soak.stack import CeleryWorkers, Gunicorn

    scratch = Path(tempfile.mkdtemp(prefix="redline-crowd-"))
    (scratch / "media").mkdir()
    env = service_env(SharedService(args.database_url), SharedService(args.redis), scratch, scratch / "media")
    # Production's own undo window (benchlib and the soak shorten it), and warnings logged, so
    # that a server error's traceback is counted.
    env.pop("UNDO_SECONDS", None)
    os.environ.pop("UNDO_SECONDS", None)
    env["LOG_LEVEL"] = "WARNING"
    os.environ.update(env)
    web = worker = sampler = None
    try:
        # More than anyone can do: a participant who runs out of work would wait, not load the server.
        items_each = int(1.5 * options["work"] / 60) + 4
        options["quota"] = None
        if args.sign_in == "link":
            items_each = options["quota"] = args.quota or default_quota(options["work"])
            # Every participant opens the link twice (the page, the accept) from this one address.
            opens = 2 * options["participants"] + 50
            env["RECRUITMENT_OPENS_PER_ADDRESS"] = os.environ["RECRUITMENT_OPENS_PER_ADDRESS"] = str(opens)
        reviewers = max(1, options["participants"] // 25)
        participants, checkers, figures = build(options["participants"], items_each, reviewers, args.sign_in)
        print(f"crowd launch: {options['participants']} participants arriving over {options['arrival']:g} s, "
              f"each working {options['work']:g} s, {reviewers} QC reviewer(s); {figures['captions']:,} captions "
              f"of {WINDOWS} windows ({figures['assigned'][0]} to {figures['assigned'][1]} a participant), built in "
              f"{figures['build seconds']:.0f} s; "
              f"sign-in: {args.sign_in}" + (
                  f" (a recruitment link, cap {options['participants']}, quota {options['quota']}, with a consent "
                  f"text; for this server only, RECRUITMENT_OPENS_PER_ADDRESS raised to "
                  f"{env['RECRUITMENT_OPENS_PER_ADDRESS']} per {os.environ.get('RECRUITMENT_WINDOW_SECONDS', '600')} s"
                  f": every participant comes from 127.0.0.1)" if options["quota"] else ""))
        web = Gunicorn(free_port(), env, scratch / "gunicorn.log", workers=args.workers, threads=args.threads)
        worker = CeleryWorkers(1, env, scratch / "celery.log")
        web.start()
        worker.start()
        print(f"stack: gunicorn {args.workers} {'sync workers' if args.threads <= 1 else f'x {args.threads} threads'}"
              f" on :{web.port}, 1 Celery worker, PostgreSQL {args.database_url.rpartition('/')[2]}, Redis "
              f"{args.redis}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        warm_up(web.port, figures["operator"], args.workers)
        quiet(lambda: [*web.worker_pids(), *worker.pids()])
        ledger = Ledger()
        sampler = Sampler({"web": lambda: [web.process.pid, *web.worker_pids()] if web.process else [],
                           "Celery worker": worker.pids}, args.database_url.rpartition("/")[2], args.database_url)
        sampler.start()
        began = time.monotonic()
        client_began = time.process_time()
        people: list[Participant] = []
        for number, way in enumerate(participants):
            arrive = began + options["arrival"] * number / max(1, len(participants))
            people.append(Participant(number, web.port, ledger, arrive, arrive + options["work"], way, number))
        end = began + options["arrival"] + options["work"]
        for number, way in enumerate(checkers):
            people.append(Reviewer(10_000 + number, web.port, ledger, began + 10, end, way, 10_000 + number))
        for person in people:
            person.start()
        last_print = began
        while any(person.is_alive() for person in people):
            time.sleep(1)
            if time.monotonic() - last_print >= 30:
                last_print = time.monotonic()
                print(f"  {last_print - began:4.0f} s: {len(ledger.answers):,} requests, "
                      f"{sum(1 for p in people if p.is_alive())} people at work, load average {os.getloadavg()[0]:.1f}",
                      flush=True)
            if time.monotonic() > end + 300:
                print("  (stopped waiting for requests still unanswered 300 s after the end)")
                break
        seconds = time.monotonic() - began
        client_cpu = time.process_time() - client_began
        sampler.stop.set()
        sampler.join(timeout=30)
        log = (scratch / "gunicorn.log").read_text(errors="replace")
        tracebacks = len(re.findall(r"^Traceback", log, re.M))
        result = report(ledger, sampler, options, seconds, client_cpu)
        print(f"server tracebacks logged: {tracebacks}")
        # What every path answers alike (annotation.middleware): a 503 names its exception here.
        refused = re.findall(r"^.*(?:Try again in a minute|The disk is full) for .*$", log, re.M)
        if refused:
            print(f"server refusals logged: {len(refused)}; " + " | ".join(line[-300:] for line in refused[:3]))
        return result
    finally:
        if sampler is not None:
            sampler.stop.set()
        if worker is not None:
            worker.stop()
        if web is not None:
            web.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may not be set up when building failed
            pass
        try:
            drop_database(args.database_url)
        except Exception as exc:  # noqa: BLE001 - said, not fatal
            print(f"could not drop the scratch database: {exc}")
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

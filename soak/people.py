"""Simulated people: annotators, reviewers and a study admin, each a thread speaking HTTP to
127.0.0.1 as the browser pages do (a session cookie, the CSRF header, JSON bodies).

A person retries what failed for lack of an answer (a dropped connection, a 5xx) within a
bounded time, as the workspace's save queue does, and checks that a retry converges: when a
retried save answers 409, the change must already be what the server has (the first try landed,
only its answer was lost). What the server acknowledged is written down in the :class:`Ledger`,
which the checks compare with the database afterwards.

Each person also keeps a book of its own (:class:`Sent`, in :attr:`Ledger.books`): every save
and every decision it sent, with the changes or the body as it sent them (never the server's
echo), and whether the server acknowledged it. The checks compare the database with the books.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import struct
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"
RETRYABLE = {0, 500, 502, 503, 504}  # 0: no answer (connection refused, reset or cut)
# gunicorn closes a kept-alive connection idle for 2 s (its --keep-alive default): a request sent
# on it later is answered by a closed socket, never by the server. A browser opens a new
# connection then; so does a client idle longer than this.
IDLE_SECONDS = 1.5


@dataclass
class Request:
    person: str
    method: str
    path: str
    started: float
    ended: float
    status: int
    body: str = ""
    answer: str = ""
    retry_after: str = ""  # the answer's Retry-After header, if any


@dataclass
class Sent:
    """One save or decision as a person sent it, in its book."""

    annotation: int
    # The audit trail's name: save, lock_overview, submit, approve, amend, return, undo, claim
    action: str
    # What the person sent: a save's changes, a decision's body; an undo: {"undone": what}
    sent: dict
    # The server answered it done (or a retry found it already done)
    acknowledged: bool
    at: float  # when the answer came, or when the person gave up


@dataclass
class Ledger:
    """Everything the people saw, shared by all their threads."""

    requests: list[Request] = field(default_factory=list)
    # (annotation id, reviewer, acknowledged at, finished at or None)
    claims: list[list] = field(default_factory=list)
    not_converged: list[str] = field(default_factory=list)
    gave_up: Counter = field(default_factory=Counter)
    actions: Counter = field(default_factory=Counter)
    # person -> what they sent, in order (see Sent)
    books: dict[str, list[Sent]] = field(default_factory=lambda: defaultdict(list))
    # the client-disconnect fault, by how the request was cut: "mid-body", "mid-response"
    disconnects: Counter = field(default_factory=Counter)
    # the jobs the people asked for (one per action, however many tries): kind -> count
    jobs_asked: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, person: str, annotation: int, action: str, sent: dict, acknowledged: bool) -> None:
        with self.lock:
            self.books[person].append(Sent(annotation, action, sent, acknowledged, time.time()))

    def record(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.actions[name] += n


class Stop(Exception):
    """The soak is over: the person leaves what they were doing."""


class Client:
    """One person's HTTP connection with the retry rule above."""

    def __init__(self, name: str, port: int, cookie: str, csrf: str, ledger: Ledger, stop: threading.Event,
                 retry_seconds: float):
        self.name, self.port, self.cookie, self.csrf = name, port, cookie, csrf
        self.ledger, self.stop, self.retry_seconds = ledger, stop, retry_seconds
        self.connection = http.client.HTTPConnection(HOST, port, timeout=60)
        self.last_answer = time.monotonic()
        self.disconnect_next = False  # set by the client-disconnect fault
        self.cut_half = False

    def headers(self, content_type: str = "application/json") -> dict[str, str]:
        return {"Cookie": self.cookie, "X-CSRFToken": self.csrf, "Host": f"{HOST}:{self.port}",
                "Content-Type": content_type, "Referer": f"http://{HOST}:{self.port}/"}

    def once(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        started = time.time()
        status, text, retry_after = 0, "", ""
        try:
            if self.disconnect_next and data is not None:
                self.disconnect_next = False
                text = f"(the client hung up {self._hang_up(method, path, data, content_type)})"
            else:
                if time.monotonic() - self.last_answer > IDLE_SECONDS:
                    self.connection.close()  # the server has closed its end by now
                self.connection.request(method, path, data, self.headers(content_type))
                response = self.connection.getresponse()
                status, text = response.status, response.read().decode("utf-8", "replace")
                retry_after = response.getheader("Retry-After") or ""
        except (OSError, http.client.HTTPException) as exc:
            self.connection.close()
            self.connection = http.client.HTTPConnection(HOST, self.port, timeout=60)
            text = f"{type(exc).__name__}: {exc}"
        self.last_answer = time.monotonic()
        self.ledger.record(Request(self.name, method, path, started, time.time(), status,
                                   (data or b"")[:300].decode("utf-8", "replace"), text[:600], retry_after))
        try:
            answer = json.loads(text) if text[:1] in ("{", "[") else {}
        except ValueError:
            answer = {}
        return status, answer

    def _hang_up(self, method: str, path: str, data: bytes, content_type: str) -> str:
        """Cut the request in flight and say where: "mid-body" (half of the body sent, then the
        connection reset) or "mid-response" (all of it sent, the first bytes of the answer read,
        then the connection reset, so the server has done the work and is writing its answer)."""
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in {**self.headers(content_type), "Content-Length": len(data),
                                         "Connection": "close"}.items()
        ) + "\r\n"
        where = "mid-body" if self.cut_half else "mid-response"
        with socket.create_connection((HOST, self.port), timeout=60) as sock:
            # A reset, not an orderly close: the server's next read or write fails at once.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            if where == "mid-body":
                sock.sendall(head.encode() + data[: len(data) // 2])
                time.sleep(0.2)  # the server is reading the body by now
            else:
                sock.sendall(head.encode() + data)
                if not sock.recv(1):
                    where = "before the answer (the server closed first)"
        with self.ledger.lock:
            self.ledger.disconnects[where] += 1
        return where

    def call(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any, int]:
        """The request, tried again while it gets no answer or a 5xx (bounded);
        (status, answer, tries). Raises Stop once the soak is over."""
        deadline = time.monotonic() + self.retry_seconds
        tries = 0
        while True:
            if self.stop.is_set() and tries:
                raise Stop
            tries += 1
            status, answer = self.once(method, path, body, **kw)
            if status not in RETRYABLE:
                return status, answer, tries
            if time.monotonic() > deadline:
                with self.ledger.lock:
                    self.ledger.gave_up[f"{method} {path.split('/')[2] if '/' in path else path}"] += 1
                return status, answer, tries
            time.sleep(min(2.0, 0.2 * tries) * random.uniform(0.7, 1.3))


def covers(annotator_pass: dict, changes: dict) -> bool:
    """Whether the pass holds everything `changes` (an autosave's) set."""
    for part in ("overview", "segmentation"):
        for key, value in (changes.get(part) or {}).items():
            if (annotator_pass.get(part) or {}).get(key) != value:
                return False
    windows = {w["index"]: w for w in annotator_pass.get("windows") or []}
    for change in changes.get("windows") or []:
        stored = windows.get(change["index"])
        if stored is None or any(stored.get(k) != v for k, v in change.items()):
            return False
    return True


# The clip a planted caption file names, which no study of the soak has.
PLANTED_CLIP = "no-such-clip-planted-by-the-soak"

WORDS = ("the", "man", "in", "a", "red", "coat", "walks", "past", "two", "parked", "cars", "then",
         "turns", "left", "while", "camera", "pans", "slowly", "across", "street")


class Person(threading.Thread):
    def __init__(self, client: Client, slug: str, seed: int, think: float):
        super().__init__(name=client.name, daemon=True)
        self.client, self.slug, self.think = client, slug, think
        self.random = random.Random(seed)
        self.errors: list[str] = []

    def pause(self, seconds: float) -> None:
        if self.client.stop.wait(seconds * self.random.uniform(0.6, 1.4)):
            raise Stop

    def run(self) -> None:
        deadline = time.monotonic() + 3600  # bounded, whatever happens
        while not self.client.stop.is_set() and time.monotonic() < deadline:
            try:
                self.step()
            except Stop:
                return
            except Exception as exc:  # noqa: BLE001 - a broken person is reported, not fatal
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) > 20:
                    return
                time.sleep(1)

    def step(self) -> None:
        raise NotImplementedError


class Annotator(Person):
    """Opens the next item, types (an autosave every ~0.7 s), locks the overview, judges each
    window and the segmentation, submits; sometimes undoes the lock or the submission; after a
    return, fixes or answers what QC named."""

    def step(self) -> None:
        c = self.client
        status, answer, _ = c.call("POST", f"/api/studies/{self.slug}/my-queue/next/")
        if status == 404:  # nothing in the queue: counted against the workload (goal: under 5 %)
            self.pause(3)
            return
        if status != 200:
            self.pause(1)
            return
        pk = answer["id"]
        status, payload, _ = c.call("GET", f"/api/annotations/{pk}/")
        if status != 200 or payload.get("state") != "in_progress":
            self.pause(0.5)
            return
        self.work(pk, payload)

    def save(self, pk: int, version: int, changes: dict) -> int | None:
        """One autosave; the version after it, or None when it could not be made. The book
        keeps the changes as sent, acknowledged or not."""
        c = self.client
        sent = dict(changes)
        if self.random.random() < 0.5:
            changes = {**changes, "active_seconds": round(self.random.uniform(0.5, 3), 2)}
        status, answer, tries = c.call("PATCH", f"/api/annotations/{pk}/draft/",
                                       {"base_version": version, "changes": changes})
        if status == 200:
            c.ledger.note(c.name, pk, "save", sent, True)
            return answer["version"]
        if status == 409 and "current" in answer:
            current = answer["current"]
            if tries > 1 and covers(current.get("annotator_pass") or {}, changes):
                # The first try landed and its answer was lost: the retry converges.
                c.ledger.note(c.name, pk, "save", sent, True)
                c.ledger.count("retries converged")
                return current["version"]
            c.ledger.note(c.name, pk, "save", sent, False)
            if tries > 1:
                c.ledger.not_converged.append(
                    f"PATCH /api/annotations/{pk}/draft/ v{version} retried {tries}x: 409, the server "
                    f"has {current.get('annotator_pass')} without {changes}")
            return None
        c.ledger.note(c.name, pk, "save", sent, False)
        return None

    def decide(self, pk: int, action: str, version: int, body: dict | None = None,
               landed=lambda current: False) -> dict | None:
        """lock-overview or submit; the payload after it, or None."""
        c = self.client
        name = action.replace("-", "_")
        status, answer, tries = c.call("POST", f"/api/annotations/{pk}/{action}/",
                                       {"base_version": version, **(body or {})})
        if status == 200:
            c.ledger.note(c.name, pk, name, body or {}, True)
            c.ledger.count(action)
            return answer
        if status == 409 and tries > 1 and "current" in answer and landed(answer["current"]):
            c.ledger.note(c.name, pk, name, body or {}, True)
            c.ledger.count(action)
            c.ledger.count("retries converged")
            return answer["current"]
        c.ledger.note(c.name, pk, name, body or {}, False)
        if status == 409 and tries > 1:
            c.ledger.not_converged.append(f"POST {action} {pk} v{version} retried {tries}x: 409 {answer}")
        return None

    def undo(self, pk: int, what: str) -> dict | None:
        """Take back `what` (lock_overview, submit) just done; the payload after it, or None."""
        c = self.client
        status, answer, _ = c.call("POST", f"/api/annotations/{pk}/undo/")
        c.ledger.note(c.name, pk, "undo", {"undone": what}, status == 200)
        if status == 200:
            c.ledger.count("undo")
            return answer
        return None

    def work(self, pk: int, payload: dict) -> None:
        version = payload["version"]
        caption = payload["caption"]
        reopened = {item["unit"] for item in payload.get("returned_units") or []}
        mine = payload.get("annotator_pass") or {}
        if not payload["overview_locked"]:
            text = (mine.get("overview") or {}).get("text") or caption["overview"]
            first = True
            for _burst in range(self.random.randint(2, 5)):  # typing: a save ~0.7 s after each burst
                self.pause(0.7)
                text = f"{text} {' '.join(self.random.choices(WORDS, k=self.random.randint(1, 4)))}"
                change = {"text": text}
                if first:
                    change.update(verdict="reject", modes=["omission"])
                    first = False
                version = self.save(pk, version, {"overview": change})
                if version is None:
                    return
            answer = self.decide(pk, "lock-overview", version, landed=lambda cur: cur.get("overview_locked"))
            if answer is None:
                return
            version = answer["version"]
            if self.random.random() < 0.2:
                self.pause(0.3)
                undone = self.undo(pk, "lock_overview")
                if undone is not None:
                    answer = self.decide(pk, "lock-overview", undone["version"],
                                         landed=lambda cur: cur.get("overview_locked"))
                    if answer is None:
                        return
                    version = answer["version"]
        fresh = not reopened
        windows = []
        for window in caption["windows"]:
            if not fresh and f"window:{window['index']}" not in reopened:
                continue
            self.pause(0.7)
            if self.random.random() < 0.3:
                change = {"index": window["index"], "verdict": "reject", "modes": ["factual"],
                          "scene": f"{window['scene']} {self.random.choice(WORDS)}"}
            else:
                change = {"index": window["index"], "verdict": "accept"}
            windows.append(change)
            if len(windows) == 2 or window is caption["windows"][-1]:
                version = self.save(pk, version, {"windows": windows})
                windows = []
                if version is None:
                    return
        if windows:
            version = self.save(pk, version, {"windows": windows})
            if version is None:
                return
        if fresh or "segmentation" in reopened:
            self.pause(0.7)
            version = self.save(pk, version, {"segmentation": {"verdict": "accept"},
                                               "ui_state": {"unit": len(caption["windows"])}})
            if version is None:
                return
        replies = {unit: "I looked again; I keep it." for unit in reopened}
        self.pause(0.5)
        submitted = lambda cur: cur.get("state") in ("submitted", "in_review", "approved")  # noqa: E731
        answer = self.decide(pk, "submit", version, {"replies": replies}, landed=submitted)
        if answer is None:
            return
        if self.random.random() < 0.2:
            self.pause(0.3)
            undone = self.undo(pk, "submit")
            if undone is not None:
                self.decide(pk, "submit", undone["version"], {"replies": replies}, landed=submitted)


class Reviewer(Person):
    """Claims the next item, reads it, approves (sometimes undoing it), amends or returns it
    (an item is returned once at most, so that the study converges)."""

    returned: set[int] = set()
    returned_lock = threading.Lock()

    def step(self) -> None:
        c = self.client
        self.pause(self.think)
        status, answer, tries = c.call("POST", f"/api/studies/{self.slug}/review-queue/next/", {})
        if status != 200:
            if tries > 1 or status == 0:
                self.adopt_lost_claims()
            self.pause(1.0)
            return
        c.ledger.note(c.name, answer["id"], "claim", {}, True)
        self.review(answer["id"])

    def adopt_lost_claims(self) -> None:
        """A claim whose answer was lost is still this reviewer's: find it in the queue."""
        status, page, _ = self.client.call("GET", f"/api/studies/{self.slug}/review-queue/?state=in_review&limit=200")
        if status != 200:
            return
        for item in page.get("items", []):
            if item.get("reviewer") == self.client.name:
                self.review(item["id"])

    def review(self, pk: int) -> None:
        c = self.client
        claim = [pk, c.name, time.time(), None]
        with c.ledger.lock:
            c.ledger.claims.append(claim)
        c.ledger.count("claim")
        status, payload, _ = c.call("GET", f"/api/annotations/{pk}/")
        if status != 200:
            return
        self.pause(self.think)
        roll = self.random.random()
        with self.returned_lock:
            may_return = pk not in self.returned
        if roll < 0.2 and may_return:
            unit = self.random.choice(["overview", "window:0", "segmentation"])
            action, body = "return", {"units": [{"unit": unit, "comment": "Please look at this again."}]}
        elif roll < 0.4:
            modes = self.random.choice([["omission"], ["omission", "factual"], ["factual"]])
            action, body = "amend", {"changes": {"overview": {"modes": modes}}}
        else:
            action, body = "approve", None
        goal = {"return": "returned", "amend": "approved", "approve": "approved"}[action]
        status, answer, tries = c.call("POST", f"/api/annotations/{pk}/{action}/", body)
        current = answer if status == 200 else answer.get("current") or {}
        acknowledged = status == 200 or (status == 409 and tries > 1 and current.get("state") == goal)
        c.ledger.note(c.name, pk, action, body or {}, acknowledged)
        if acknowledged:
            claim[3] = time.time()
            c.ledger.count(action)
            if action == "return":
                with self.returned_lock:
                    self.returned.add(pk)
            if action == "approve" and status == 200 and self.random.random() < 0.2:
                self.pause(0.3)
                undone, again, _ = c.call("POST", f"/api/annotations/{pk}/undo/")
                c.ledger.note(c.name, pk, "undo", {"undone": "approve"}, undone == 200)
                if undone == 200:
                    c.ledger.count("undo")
                    claim[3] = None
                    status, again, tries = c.call("POST", f"/api/annotations/{pk}/approve/")
                    c.ledger.note(c.name, pk, "approve", {}, status == 200 or (
                        status == 409 and tries > 1 and (again.get("current") or {}).get("state") == "approved"))
                    if status == 200 or status == 409:
                        claim[3] = time.time()
            return
        if status == 409 and tries > 1:
            c.ledger.not_converged.append(f"POST {action} {pk} retried {tries}x: 409 {str(answer)[:300]}")
        claim[3] = time.time()


class Admin(Person):
    """Imports a caption file of a new model as a job, assigns what is new, starts a study
    scoring job and (with `profiles`) a profile export.

    As a person waits for the export or the scoring job they asked for before asking another,
    the admin asks for one only when no earlier one of that kind is unfinished (`unfinished`,
    which the soak answers from the database, never by opening a page: pages recover jobs),
    so the heavy jobs are what two workers can serve and the queue does not grow for the run's
    length (the 30-minute run had 24 exports and 144 scoring jobs left when it stopped)."""

    def __init__(self, client: Client, slug: str, seed: int, think: float, clips: list[dict],
                 annotators: list[str], profiles: bool = True, models: int = 1,
                 unfinished: Callable[[str], int] | None = None):
        super().__init__(client, slug, seed, think)
        self.clips, self.annotators, self.profiles = clips, annotators, profiles
        self.models = models  # new models per import: enough work that no annotator waits
        self.imports = self.steps = 0
        self.unfinished = unfinished

    def still_waiting(self, kind: str) -> bool:
        """Whether a job of `kind` ("scoring", "profile") asked earlier is unfinished."""
        if self.unfinished is None or not self.unfinished(kind):
            return False
        self.client.ledger.count(f"{kind} job not asked: the last one unfinished")
        return True

    def caption_file(self, models: int = 1) -> bytes:
        lines = []
        for _ in range(models):
            self.imports += 1
            model = f"soak-model-{self.imports}-{uuid.uuid4().hex[:6]}"
            for clip in self.clips:
                third = clip["duration"] / 3
                lines.append(json.dumps({
                    "clip": clip["name"], "model": model,
                    "overview": f"A short clip. {' '.join(self.random.choices(WORDS, k=12))}.",
                    "windows": [{"start": round(i * third, 2), "end": round((i + 1) * third, 2),
                                 "scene": f"Scene {i + 1}: {' '.join(self.random.choices(WORDS, k=5))}.",
                                 "shot": "Static shot."} for i in range(3)],
                }))
        return "\n".join(lines).encode()

    def import_job(self, models: int = 1, planted: bool = False) -> dict | None:
        """Upload a caption file of `models` new models as an import job; the job, or None.
        `planted`: a file naming a clip the study lacks, which the import must refuse (the
        only job allowed to end other than done), its error naming the clip."""
        boundary = uuid.uuid4().hex
        content = self.caption_file(models)
        name = "soak.jsonl"
        if planted:
            name = "planted-unknown-clip.jsonl"
            first = json.dumps({"clip": self.clips[0]["name"]})[1:-1].encode()
            content = content.replace(first, json.dumps({"clip": PLANTED_CLIP})[1:-1].encode())
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + \
            f"\r\n--{boundary}--\r\n".encode()
        with self.client.ledger.lock:
            self.client.ledger.jobs_asked["caption import"] += 1
        status, job, _ = self.client.call("POST", f"/api/studies/{self.slug}/captions/import-jobs/", raw=body,
                                          content_type=f"multipart/form-data; boundary={boundary}")
        if status != 202:
            return None
        self.client.ledger.count("caption import job")
        return job

    def step(self) -> None:
        c = self.client
        self.pause(self.think)
        job = self.import_job(models=self.models, planted=self.steps == 1)
        if job is not None:
            self.follow(job["url"], "state", seconds=20)
        # Whatever imports have finished by now (this one, or an earlier one that was slower).
        # Under the study's own design (frozen while it runs).
        status, _, _ = c.call("POST", f"/api/studies/{self.slug}/assignments/", {"annotators": self.annotators})
        if status == 201:
            c.ledger.count("assignment")
        self.steps += 1
        if self.steps % 6 != 3 or not self.profiles:
            if self.still_waiting("scoring"):
                return
            with c.ledger.lock:
                c.ledger.jobs_asked["scoring"] += 1
            status, job, _ = c.call("POST", f"/api/studies/{self.slug}/score-jobs/",
                                    {"metrics": ["words_changed", "char_similarity"]})
            if status == 202:
                c.ledger.count("scoring job")
        elif not self.still_waiting("profile"):
            self.profile_job()

    def profile_job(self, resamples: int = 100) -> str | None:
        # Few resamples: an export must end between two kills of the busiest worker (a round of
        # faults, about 3 minutes), or it is started again and again until it fails.
        with self.client.ledger.lock:
            self.client.ledger.jobs_asked["profile"] += 1
        status, job, _ = self.client.call("POST", f"/studies/{self.slug}/profiles/jobs/",
                                          {"resamples": resamples, "adjusted_resamples": 20, "seed": 1})
        if status != 202:
            return None
        self.client.ledger.count("profile job")
        return job["url"]

    def follow(self, url: str, key: str, seconds: float = 60) -> dict:
        deadline = time.monotonic() + seconds
        answer: dict = {}
        while time.monotonic() < deadline:
            status, answer, _ = self.client.call("GET", url)
            if status == 200 and answer.get(key) not in ("queued", "running"):
                return answer
            self.pause(1.0)
        return answer

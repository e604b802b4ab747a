"""What a crowd launch costs the web server before any work: its processes' memory, the import
time of its URL configuration, the requests and bytes of a cold and a warm workspace load, and
the bytes of video read before the clip's first frame shows.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_light_web.py``.

- **URL configuration**: ``django.setup()`` and every URL pattern resolved, in a fresh
  interpreter (median of 3), and whether any analysis, plotting, Parquet or model library came
  with it (issue 33: none);
- it builds a scratch SQLite study with one real 30 s clip written *without* faststart (the
  import serves a copy with its index in front), collects the static files and serves Redline
  with gunicorn (2 workers, DEBUG off);
- **web workers' memory**: each worker's resident set (RSS) after start and after the loads
  below (target: under 120 MB);
- **cold and warm workspace load** in headless Chromium: requests and bytes over the network
  (Chrome DevTools protocol), by kind; the warm load is the same page again in the same browser
  profile (hashed static files cached as immutable: no script or style fetched);
- **video start**: the bytes of the clip's video received, and the range requests made, when the
  player first has a frame (``readyState >= 2``), beside the file's size.

Without ``/usr/bin/chromium`` (or REDLINE_CHROMIUM) or ffmpeg it measures the URL configuration only.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import HOST, REPO, free_port, gunicorn_binary, signed_in_session, wait_for_server

CHROMIUM = os.environ.get("REDLINE_CHROMIUM", "/usr/bin/chromium")
HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "torch", "sentence_transformers", "transformers", "sklearn")
RSS_TARGET_MB = 120
URLCONF_IMPORT = f"""
import json, sys, time
started = time.perf_counter()
import django
django.setup()
from django.urls import get_resolver
def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))
walk(get_resolver().url_patterns)
seconds = time.perf_counter() - started
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
print(json.dumps({{"seconds": seconds, "rss_mb": rss,
                  "heavy": sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))}}))
"""


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def workers_of(server: subprocess.Popen) -> list[int]:
    return [int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()]


def booted_rss(server: subprocess.Popen) -> dict[int, float]:
    """Each worker's resident memory once it has loaded the application (stopped growing)."""
    last: dict[int, float] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = {pid: rss_mb(pid) for pid in workers_of(server)}
        if now and now.keys() == last.keys() and all(abs(now[p] - last[p]) < 0.5 and now[p] > 40 for p in now):
            return now
        last = now
    return last


def url_configuration() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DATABASE_URL", None)
    runs = []
    for _ in range(3):
        result = subprocess.run([sys.executable, "-c", URLCONF_IMPORT], cwd=REPO, env=env, capture_output=True,
                                text=True, check=True)
        runs.append(json.loads(result.stdout.splitlines()[-1]))
    heavy = sorted({name for run in runs for name in run["heavy"]})
    print(f"URL configuration: imported in {statistics.median(r['seconds'] for r in runs):.2f} s (median of 3, "
          f"fresh interpreter), {statistics.median(r['rss_mb'] for r in runs):.0f} MB resident; "
          f"analysis/model libraries loaded: {', '.join(heavy) or 'none'}")


def make_slow_start_clip(folder: Path) -> Path:
    """A 30 s 640x360 H.264 clip written without faststart (its index after the frames)."""
    path = folder / "slow-start.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=30",
                    "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", str(path)], check=True)
    return path


def build(folder: Path) -> dict:
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model

    from annotation.media import video as media
    from annotation.models import Annotation, Caption, Clip
    from annotation.services import workflow as flow
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.clips import clip_import_file, clip_prepare_media
    from annotation.services.studies import membership_grant, study_create

    study = study_create(slug="bench-light", name="light web bench")
    source = make_slow_start_clip(folder)
    clip = clip_prepare_media(clip_id=clip_import_file(study=study, path=source).pk)
    windows = [{"start": n * 10.0, "end": (n + 1) * 10.0, "scene": f"Scene {n}.", "shot": "Static."} for n in range(3)]
    captions_import_jsonl(study=study, data=json.dumps(
        {"clip": clip.name, "model": "bench-model", "overview": "A test pattern.", "windows": windows}).encode())
    person = get_user_model().objects.create(username="bench-annotator")
    membership_grant(study=study, user=person, role="annotator")
    flow.annotations_assign(study=study, annotators=[person], captions=[Caption.objects.get(clip=clip)])
    annotation = flow.annotation_open(annotation=Annotation.objects.get(annotator=person), actor=person)
    clip = Clip.objects.get(pk=clip.pk)
    return {"annotation": annotation.pk, "session": signed_in_session(person), "source": source,
            "served": Path(clip.playable.path), "source_faststart": media.is_faststart(source),
            "served_faststart": media.is_faststart(clip.playable.path)}


class Network:
    """Requests and bytes over the network of one page, from the Chrome DevTools protocol."""

    def __init__(self, page):
        self.session = page.context.new_cdp_session(page)
        self.session.send("Network.enable")
        self.requests: dict[str, dict] = {}
        self.session.on("Network.requestWillBeSent", self._sent)
        self.session.on("Network.responseReceived", self._answered)
        self.session.on("Network.requestServedFromCache", self._cached)
        self.session.on("Network.dataReceived", self._data)
        self.session.on("Network.loadingFinished", self._finished)

    def _sent(self, event):
        self.requests[event["requestId"]] = {"url": event["request"]["url"], "type": event.get("type", "Other"),
                                             "bytes": 0, "cached": False, "range": "range" in {
                                                 k.lower() for k in event["request"].get("headers", {})}}

    def _cached(self, event):
        if event["requestId"] in self.requests:
            self.requests[event["requestId"]]["cached"] = True

    def _answered(self, event):
        response = event["response"]
        if event["requestId"] in self.requests:
            self.requests[event["requestId"]]["cached"] = bool(
                response.get("fromDiskCache") or response.get("fromMemoryCache"))

    def _data(self, event):
        if event["requestId"] in self.requests:
            self.requests[event["requestId"]]["bytes"] += event.get("encodedDataLength", 0)

    def _finished(self, event):
        if event["requestId"] in self.requests:
            self.requests[event["requestId"]]["total"] = event.get("encodedDataLength", 0)

    def summary(self) -> dict[str, tuple[int, int]]:
        """(requests over the network, bytes) per kind: the page, scripts and styles, the rest."""
        kinds: dict[str, list[int]] = {}
        for request in self.requests.values():
            # A response from the cache has no bytes over the network (a revalidation has its headers).
            if request["cached"] or not request.get("total", request["bytes"]):
                continue
            kind = {"Document": "page", "Script": "scripts", "Stylesheet": "styles"}.get(request["type"], "other")
            if "/video" in request["url"]:
                kind = "video"
            counted = kinds.setdefault(kind, [0, 0])
            counted[0] += 1
            counted[1] += request.get("total", request["bytes"])
        return {kind: (n, size) for kind, (n, size) in sorted(kinds.items())}

    def close(self) -> None:
        self.session.detach()

    def video_bytes(self) -> tuple[int, int]:
        videos = [r for r in self.requests.values() if "/video" in r["url"] and not r["cached"]]
        return sum(r["bytes"] for r in videos), len(videos)


def load(page, url: str) -> dict[str, tuple[int, int]]:
    """Load the workspace; what came over the network, by kind."""
    network = Network(page)
    page.goto(url)
    page.wait_for_selector("#workspace[data-ready=true]")
    page.wait_for_load_state("networkidle")
    network.close()
    return network.summary()


def first_frame_prefix(path: Path) -> int | None:
    """The fewest leading bytes of ``path`` from which ffmpeg decodes the first frame (to 1 KiB),
    or None when no prefix short of the whole file does (the index is at the end)."""
    data = path.read_bytes()

    def decodes(size: int) -> bool:
        result = subprocess.run(["ffmpeg", "-v", "error", "-i", "pipe:0", "-frames:v", "1", "-f", "null", "-"],
                                input=data[:size], capture_output=True)
        return result.returncode == 0 and b"error" not in result.stderr.lower()

    if not decodes(len(data) - 1):
        return None
    low, high = 0, len(data) - 1
    while high - low > 1024:
        middle = (low + high) // 2
        low, high = (low, middle) if decodes(middle) else (middle, high)
    return high


def first_frame(browser, base: str, cookie: dict, url: str) -> tuple[int, int] | None:
    """The video bytes received, and the requests made, when the player first has a frame; in a
    fresh profile, the network slowed to 8 Mbit/s so that the moment can be seen (on the loopback
    interface the whole file arrives within a poll)."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_cookies([cookie])
    page = context.new_page()
    network = Network(page)
    network.session.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 20, "downloadThroughput": 1_000_000, "uploadThroughput": 1_000_000})
    page.goto(url)
    seen = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if page.evaluate("document.querySelector('#video').readyState >= 2"):
            seen = network.video_bytes()
            break
        time.sleep(0.01)
    network.close()
    context.close()
    return seen


def describe(summary: dict[str, tuple[int, int]]) -> str:
    return "; ".join(f"{kind} {n} request(s), {size / 1024:.1f} KiB" for kind, (n, size) in summary.items())


def main(argv: list[str] | None = None) -> int:
    url_configuration()
    if not Path(CHROMIUM).exists() or not shutil.which("ffmpeg"):
        print(f"SKIP the served part: needs {CHROMIUM} and ffmpeg (`make test` installs both)")
        return 0
    folder = Path(tempfile.mkdtemp(prefix="redline-bench-light-"))
    env = {
        **os.environ, "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}", "MEDIA_ROOT": str(folder / "media"),
        "STATIC_ROOT": str(folder / "static"), "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": HOST, "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "ERROR",
        "JOB_RUNNER": "celery", "CELERY_TASK_ALWAYS_EAGER": "1",
    }
    env.pop("CELERY_BROKER_URL", None)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "MEDIA_ROOT", "STATIC_ROOT", "DEBUG", "SECRET_KEY",
                                           "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE", "JOB_RUNNER",
                                           "CELERY_TASK_ALWAYS_EAGER")})
    server = None
    try:
        built = build(folder)
        from django.conf import settings
        from django.db import connections

        connections.close_all()
        port = free_port()
        server = subprocess.Popen([gunicorn_binary(), "config.wsgi:application", "--bind", f"{HOST}:{port}",
                                   "--workers", "2", "--log-level", "warning", "--chdir", str(REPO)], env=env, cwd=REPO)
        wait_for_server(port, server)
        started_rss = booted_rss(server)
        base = f"http://{HOST}:{port}"
        from playwright.sync_api import sync_playwright

        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; gunicorn (2 workers, "
              f"DEBUG off) on SQLite; headless Chromium")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": built["session"], "url": base}])
            page = context.new_page()
            url = f"{base}/annotate/{built['annotation']}/"
            cold, warm = load(page, url), load(page, url)
            context.close()
            frame = first_frame(browser, base, {"name": settings.SESSION_COOKIE_NAME, "value": built["session"],
                                                "url": base}, url)
            browser.close()
        print(f"workspace, cold load: {describe(cold)}")
        print(f"workspace, warm load: {describe(warm)}")
        static_again = sum(warm.get(kind, (0, 0))[0] for kind in ("scripts", "styles"))
        print(f"  scripts and styles fetched again on the warm load: {static_again} (target 0)")
        source, served = built["source"], built["served"]
        print(f"video: imported a {source.stat().st_size / 1024:.0f} KiB clip "
              f"{'with' if built['source_faststart'] else 'without'} faststart; the served file "
              f"({served.stat().st_size / 1024:.0f} KiB) is {'' if built['served_faststart'] else 'NOT '}faststart")
        for name, path in (("imported original", source), ("served file", served)):
            prefix = first_frame_prefix(path)
            print(f"  {name}: " + (f"the first frame decodes from its first {prefix / 1024:.0f} KiB "
                                   f"({prefix / path.stat().st_size:.1%}): one range request from byte 0"
                                   if prefix else "no prefix decodes (index at the end): a second range request "
                                   "for the end of the file comes first"))
        if frame is None:
            print("  in Chromium: the player showed no frame within 60 s")
        else:
            print(f"  in Chromium (with the page's own start-up on this machine): first frame shown after "
                  f"{frame[0] / 1024:.0f} KiB of video in {frame[1]} request(s) "
                  f"({frame[0] / served.stat().st_size:.0%} of the file; 8 Mbit/s, polled every 10 ms)")
        for pid, before in started_rss.items():
            after = rss_mb(pid)
            print(f"web worker {pid}: {before:.0f} MB resident after start, {after:.0f} MB after the loads "
                  f"({'ok' if after < RSS_TARGET_MB else 'over'} the {RSS_TARGET_MB} MB target)")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

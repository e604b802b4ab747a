"""The annotator's workspace in headless Chromium: time to interactive and keystroke response.

Standalone (`make bench` runs it): ``.venv/bin/python bench/bench_workspace.py [--loads 8]``.
It builds a scratch SQLite study in a temporary folder with one real 60 s clip (ffmpeg) and
captions of 3, 50 and 200 windows, each assigned to one annotator and already in the window
pass (the heavier page: every window is a chip and a timeline segment). It serves Redline with
gunicorn (DEBUG off, static files collected) and drives Debian's Chromium with Playwright:

- **time to interactive**: from the start of navigation to the moment the page marks itself
  ready (``#workspace[data-ready=true]``), read in the page with ``performance.now()``; the first
  load of each page is a warm-up and is not counted;
- **keystroke response**: ``a`` accepts the current window and moves to the next; the time from
  the keydown to the first animation frame after the next window is in the page, measured in
  the page;
- **keystroke to redline**: typing into a rejected window's scene (3, 50, 200 windows) and into
  a 2,000-word overview that already carries an edit every 40 words; the time from the keydown
  to the redline under the editor being updated (computed in the page by edits.js), and to the
  next animation frame after it.

Targets: a 50-window caption interactive within 1 s, a keystroke answered within 100 ms (the
limit at which a response feels instant), and keystroke to redline within 16 ms (one frame).
Prints medians and p95s and their ratios to the
targets. Without ``/usr/bin/chromium`` (or REDLINE_CHROMIUM) or ffmpeg it prints one SKIP line.
"""

from __future__ import annotations

import argparse
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

from benchlib import HOST, REPO, free_port, gunicorn_binary, percentile, signed_in_session, wait_for_server

CHROMIUM = os.environ.get("REDLINE_CHROMIUM", "/usr/bin/chromium")
CLIP_SECONDS = 60
WINDOW_COUNTS = (3, 50, 200)
READY_TARGET_MS = 1000.0
KEY_TARGET_MS = 100.0
REDLINE_TARGET_MS = 16.0
OVERVIEW_WORDS = 2000
VOCABULARY = ("a man woman walks into the room and sits down at table while camera pans "
              "slowly left towards window where light falls on red car parked in street outside "
              "people pass by").split()

# Installed on the redline under an editor: note when it changes, and the frame after.
REDLINE_PROBE = """
(selector) => {
  window.__bench.redlines = []; window.__bench.frames = [];
  new MutationObserver(() => {
    window.__bench.redlines.push(performance.now());
    requestAnimationFrame(() => window.__bench.frames.push(performance.now()));
  }).observe(document.querySelector(selector),
             {subtree: true, childList: true, characterData: true});
}
"""

# Runs in the page before its own scripts: note when the page marks itself ready, when a key
# goes down and when the window on screen changes, all on the page's performance clock.
PAGE_PROBE = """
window.__bench = {ready: null, keys: [], units: []};
document.addEventListener("keydown", () => window.__bench.keys.push(performance.now()), true);
new MutationObserver(() => {
  const workspace = document.getElementById("workspace");
  if (window.__bench.ready === null && workspace && workspace.dataset.ready === "true") {
    window.__bench.ready = performance.now();
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-ready"]});
let shownUnit = null;
new MutationObserver(() => {
  const unit = document.getElementById("unit");
  if (unit && unit.dataset.unit !== shownUnit) {
    shownUnit = unit.dataset.unit;
    requestAnimationFrame(() => window.__bench.units.push(performance.now()));
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["data-unit"]});
"""



def wait_until(page, expression: str, timeout: float = 30.0) -> None:
    """Poll ``expression`` through page.evaluate: page.wait_for_function polls with eval, which
    the pages' Content-Security-Policy refuses. The numbers come from the page's own probes, so
    how we wait does not change them."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {expression}")
        time.sleep(0.005)

def make_clip(folder: Path) -> Path:
    path = folder / "bench-clip.mp4"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
         f"testsrc2=size=320x180:rate=25:duration={CLIP_SECONDS}",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(path)],
        check=True,
    )
    return path


def caption_record(clip: str, windows: int) -> dict:
    span = CLIP_SECONDS / windows
    return {
        "clip": clip, "model": f"bench-model-{windows}",
        "overview": "A test card with moving colour bars and a counter that keeps running.",
        "windows": [{"start": round(i * span, 3), "end": round((i + 1) * span, 3),
                     "scene": f"Part {i + 1}: the colour bars move and the counter keeps running.",
                     "shot": "Static frame, no camera movement."} for i in range(windows)],
    }


def long_overview(words: int = OVERVIEW_WORDS) -> str:
    """A deterministic paragraph of `words` words, in sentences."""
    out = []
    for i in range(words):
        word = VOCABULARY[(i * 7 + i // 13) % len(VOCABULARY)]
        out.append(word + ("." if i % 17 == 16 else ""))
    return " ".join(out)


def build(folder: Path) -> dict[int | str, dict]:
    """The scratch study; for each window count an annotation in the window pass and a session."""
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    from django.contrib.auth import get_user_model

    from annotation.models import Annotation, Caption
    from annotation.services import workflow as flow
    from annotation.services.captions import captions_import_jsonl
    from annotation.services.clips import clip_import_file
    from annotation.services.studies import membership_grant, study_create

    study = study_create(slug="bench-workspace", name="workspace bench")
    clip = clip_import_file(study=study, path=make_clip(folder))
    records = [caption_record(clip.name, n) for n in WINDOW_COUNTS]
    captions_import_jsonl(study=study, data="\n".join(json.dumps(r) for r in records).encode())
    User = get_user_model()
    pages = {}
    for count in WINDOW_COUNTS:
        person = User.objects.create(username=f"bench-annotator-{count}")
        membership_grant(study=study, user=person, role="annotator")
        caption = Caption.objects.get(clip=clip, model__name=f"bench-model-{count}")
        flow.annotations_assign(study=study, annotators=[person], captions=[caption])
        annotation = flow.annotation_open(annotation=Annotation.objects.get(annotator=person), actor=person)
        annotation = flow.annotation_save(annotation_id=annotation.pk, actor=person, base_version=annotation.version,
                                          changes={"overview": {"verdict": "accept"}})
        flow.overview_lock(annotation_id=annotation.pk, actor=person, base_version=annotation.version)
        pages[count] = {"annotation": annotation.pk, "session": signed_in_session(person)}
    overview = {"clip": clip.name, "model": "bench-model-overview", "overview": long_overview(),
                "windows": caption_record(clip.name, 3)["windows"]}
    captions_import_jsonl(study=study, data=json.dumps(overview).encode())
    person = User.objects.create(username="bench-annotator-overview")
    membership_grant(study=study, user=person, role="annotator")
    caption = Caption.objects.get(clip=clip, model__name="bench-model-overview")
    flow.annotations_assign(study=study, annotators=[person], captions=[caption])
    annotation = flow.annotation_open(annotation=Annotation.objects.get(annotator=person), actor=person)
    pages["overview"] = {"annotation": annotation.pk, "session": signed_in_session(person)}
    return pages


def measure(browser, base: str, session_cookie: str, page_info: dict, loads: int, keys: int) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_cookies([{"name": session_cookie, "value": page_info["session"], "url": base}])
    context.add_init_script(PAGE_PROBE)
    page = context.new_page()
    url = f"{base}/annotate/{page_info['annotation']}/"
    ready = []
    for attempt in range(loads + 1):
        html_bytes = len(page.goto(url).body())
        page.wait_for_selector("#workspace[data-ready=true][data-state=windows]")
        if attempt:  # the first load warms the server and the browser's caches
            ready.append(page.evaluate("window.__bench.ready"))
    responses = []
    for position in range(1, keys + 1):
        page.keyboard.press("a")
        page.wait_for_selector(f"#unit[data-unit='{position}']")
        wait_until(page, f"window.__bench.units.length > {position}")
        probe = page.evaluate("window.__bench")
        responses.append(probe["units"][-1] - probe["keys"][-1])
    context.close()
    return {"ready": ready, "keys": responses, "html_bytes": html_bytes}


def measure_typing(
    browser, base: str, session_cookie: str, page_info: dict, keys: int, overview: bool
) -> dict:
    """Keydown to redline (and to the frame after) while typing in the middle of the text."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_cookies([{"name": session_cookie, "value": page_info["session"], "url": base}])
    context.add_init_script(PAGE_PROBE)
    page = context.new_page()
    page.goto(f"{base}/annotate/{page_info['annotation']}/")
    page.wait_for_selector("#workspace[data-ready=true]")
    page.keyboard.press("r")
    field = "#overview-text" if overview else "#window-scene"
    editor = page.locator(field)
    if overview:  # an overview already post-edited: one word in 40 changed
        editor.evaluate("""area => {
            area.value = area.value.split(" ")
                .map((w, i) => (i % 40 === 20 ? w.toUpperCase() + "s" : w)).join(" ");
            area.dispatchEvent(new Event("input"));
        }""")
    editor.evaluate("""area => {
        const middle = area.value.length >> 1;
        area.setSelectionRange(middle, middle);
    }""")
    page.evaluate(REDLINE_PROBE, f"{field}-redline")
    to_redline, to_frame = [], []
    for press in range(keys):
        page.keyboard.press("x" if press % 5 else "Space")
        wait_until(page, f"window.__bench.frames.length > {press}")
        probe = page.evaluate("window.__bench")
        to_redline.append(probe["redlines"][press] - probe["keys"][-1])
        to_frame.append(probe["frames"][press] - probe["keys"][-1])
        if len(probe["redlines"]) != press + 1:
            raise RuntimeError("one keystroke changed the redline more than once")
    words = len(editor.input_value().split())
    context.close()
    return {"redline": to_redline, "frame": to_frame, "words": words}


def fine(values: list[float], target: float) -> str:
    median, p95 = statistics.median(values), percentile(values, 0.95)
    return (f"median {median:.1f} ms, p95 {p95:.1f} ms "
            f"(p95 / {target:.0f} ms target = {p95 / target:.2f}x, "
            f"{'within' if p95 <= target else 'OVER'} target)")


def line(values: list[float], target: float) -> str:
    median, p95 = statistics.median(values), percentile(values, 0.95)
    return (f"median {median:.0f} ms, p95 {p95:.0f} ms (p95 / {target:.0f} ms target = {p95 / target:.2f}x, "
            f"{'within' if p95 <= target else 'OVER'} target)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=8, help="timed page loads per caption (8)")
    parser.add_argument("--keys", type=int, default=20, help="timed keystrokes per caption, at most windows - 1 (20)")
    parser.add_argument("--typed", type=int, default=40,
                        help="timed keystrokes typed into each redlined text (40)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists() or not shutil.which("ffmpeg"):
        print(f"SKIP workspace bench: needs {CHROMIUM} and ffmpeg (`make test` installs both)")
        return 0

    folder = Path(tempfile.mkdtemp(prefix="redline-bench-workspace-"))
    env = {
        **os.environ, "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}", "MEDIA_ROOT": str(folder / "media"),
        "STATIC_ROOT": str(folder / "static"), "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": HOST, "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "ERROR",
    }
    env.pop("CELERY_BROKER_URL", None)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "MEDIA_ROOT", "STATIC_ROOT", "DEBUG", "SECRET_KEY",
                                           "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE")})
    server = None
    try:
        pages = build(folder)
        from django.conf import settings
        from django.db import connections

        connections.close_all()
        port = free_port()
        server = subprocess.Popen(
            [gunicorn_binary(), "config.wsgi:application", "--bind", f"{HOST}:{port}", "--workers", "2",
             "--log-level", "warning", "--chdir", str(REPO)],
            env=env, cwd=REPO,
        )
        wait_for_server(port, server)
        from playwright.sync_api import sync_playwright

        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; gunicorn (2 workers, "
              f"DEBUG off) on SQLite; headless Chromium; {args.loads} timed loads per caption after one warm-up")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
            for count in WINDOW_COUNTS:
                info = pages[count]
                keys = max(1, min(args.keys, count - 1))
                result = measure(browser, f"http://{HOST}:{port}", settings.SESSION_COOKIE_NAME, info,
                                 max(1, args.loads), keys)
                print(f"{count} windows (HTML {result['html_bytes'] / 1024:.0f} KiB):")
                print(f"  time to interactive: {line(result['ready'], READY_TARGET_MS)}")
                print(f"  keystroke to next window ({keys} presses): {line(result['keys'], KEY_TARGET_MS)}")
                typed = measure_typing(browser, f"http://{HOST}:{port}",
                                       settings.SESSION_COOKIE_NAME, info, max(1, args.typed),
                                       overview=False)
                print(f"  keystroke to redline, window scene ({args.typed} keys): "
                      f"{fine(typed['redline'], REDLINE_TARGET_MS)}; to next frame median "
                      f"{statistics.median(typed['frame']):.1f} ms")
            typed = measure_typing(browser, f"http://{HOST}:{port}", settings.SESSION_COOKIE_NAME,
                                   pages["overview"], max(1, args.typed), overview=True)
            print(f"{typed['words']}-word overview, edited every 40 words, typing in the middle:")
            print(f"  keystroke to redline ({args.typed} keys): "
                  f"{fine(typed['redline'], REDLINE_TARGET_MS)}; "
                  f"to next frame median {statistics.median(typed['frame']):.1f} ms")
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

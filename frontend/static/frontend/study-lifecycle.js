// The study page's lifecycle buttons (study admins): start, close (after a confirmation that
// shows what is unfinished) and archive, through the same REST API as everyone else
// (POST /api/studies/<slug>/start/, /close/, /archive/). The server decides; the page shows
// its answer and reloads once the study moved.

import { csrfToken } from "./redline.js";

const data = JSON.parse(document.getElementById("lifecycle-data")?.textContent || "null");
const $ = (id) => document.getElementById(id);
const result = $("lifecycle-result");

async function move(name, body = {}) {
  const response = await fetch(`/api/studies/${data.study}/${name}/`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  return { ok: response.ok, answer };
}

function say(text, error = false) {
  result.textContent = text;
  result.classList.toggle("error", error);
}

function moved() {
  say("Done.");
  window.location.reload();
}

function listUnfinished(unfinished, labels) {
  const box = $("close-unfinished");
  box.replaceChildren();
  const rows = Object.entries(unfinished || {}).filter(([, n]) => n > 0);
  const intro = document.createElement("p");
  intro.textContent = rows.length ? "Unfinished:" : "Nothing is unfinished.";
  box.append(intro);
  if (!rows.length) return;
  const list = document.createElement("ul");
  list.id = "unfinished-list";
  for (const [key, n] of rows) {
    const item = document.createElement("li");
    item.dataset.kind = key;
    item.textContent = `${n} ${labels[key] || key}`;
    list.append(item);
  }
  box.append(list);
}

const LABELS = data?.labels || {};

$("study-start")?.addEventListener("click", async () => {
  say("Starting…");
  const { ok, answer } = await move("start");
  if (ok) return moved();
  if (answer.confirm) {
    // Some captions have no annotator: the admin decides, having read how many and why.
    say("");
    $("start-unassigned").textContent = `${answer.confirm.detail}.`;
    return $("start-dialog").showModal();
  }
  const missing = (answer.missing || []).map((item) => item.detail).join("; ");
  say(missing ? `Cannot start yet: ${missing}.` : answer.detail, true);
});
$("start-cancel")?.addEventListener("click", () => $("start-dialog").close());
$("start-confirm")?.addEventListener("click", async () => {
  const { ok, answer } = await move("start", { confirm: true });
  $("start-dialog").close();
  if (ok) return moved();
  say(answer.detail, true);
});

$("study-close")?.addEventListener("click", async () => {
  // Asked without confirming, the server answers what is unfinished: shown before the choice.
  const { ok, answer } = await move("close", { confirm: false });
  if (ok) return moved();
  if (!answer.unfinished) return say(answer.detail, true);
  listUnfinished(answer.unfinished, LABELS);
  $("close-dialog").showModal();
});
$("close-cancel")?.addEventListener("click", () => $("close-dialog").close());
$("close-confirm")?.addEventListener("click", async () => {
  const { ok, answer } = await move("close", { confirm: true });
  $("close-dialog").close();
  if (ok) return moved();
  say(answer.detail, true);
});

$("study-archive")?.addEventListener("click", () => $("archive-dialog").showModal());
$("archive-cancel")?.addEventListener("click", () => $("archive-dialog").close());
$("archive-confirm")?.addEventListener("click", async () => {
  const { ok, answer } = await move("archive");
  $("archive-dialog").close();
  if (ok) return moved();
  say(answer.detail, true);
});

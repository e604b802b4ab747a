// Where the workspace's live edit size comes from, by the study's caption language.
//
// English and other spaced languages: edits.js, in the page, on every keystroke (offline too),
// with exactly the server's numbers. Chinese and Japanese: words come from a dictionary
// segmenter that runs only on the server (scoring/metrics/segment.py), so the page asks
// /api/edit-size/ after a short pause in typing and shows the server's numbers, saying so.
// The server scores again whatever is stored, in every language.

import { liveEditSize } from "./edits.js";
import { csrfToken } from "./redline.js";

/** Languages whose words the page itself counts exactly as the server does. */
export const PAGE_LANGUAGES = new Set(["en", "other"]);
const NAMES = { zh: "Chinese", ja: "Japanese" };
const PAUSE_MS = 250;

export function measuredInPage(language) {
  return PAGE_LANGUAGES.has(language || "en");
}

/** What the page says beside a size that came from the server (empty when measured here). */
export function serverNote(language, state) {
  const name = NAMES[language] || language;
  if (state === "waiting") return `Measuring: ${name} words are counted by the server…`;
  if (state === "offline") return `${name} words are counted by the server, which cannot be reached: the edit size will show once it answers.`;
  return `Edit size from the server (${name} words are cut by a word segmenter that runs there).`;
}

/**
 * A measurer: measure(target, text) calls show(target, size, note) — at once with the page's
 * numbers for spaced languages, else after the server answered (note says so). A late answer
 * for a text the target no longer shows is dropped.
 */
export function liveMeasurer({ study, language, cut, show, post = postEditSize, pause = PAUSE_MS }) {
  if (measuredInPage(language)) {
    return (target, text) => show(target, liveEditSize(target.original, text, cut), "");
  }
  const timers = new Map();
  return (target, text) => {
    show(target, null, serverNote(language, "waiting"));
    clearTimeout(timers.get(target));
    timers.set(target, setTimeout(async () => {
      let size;
      try {
        size = await post({ study, original: target.original, corrected: text, near_total_cut: cut });
      } catch {
        if (target.shown === text) show(target, null, serverNote(language, "offline"));
        return;
      }
      if (target.shown === text) show(target, size, serverNote(language, "done"));
    }, pause));
  };
}

async function postEditSize(body) {
  const response = await fetch("/api/edit-size/", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`edit size: ${response.status}`);
  return response.json();
}

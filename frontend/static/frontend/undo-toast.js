// A short undo for the decisive actions (locking the overview, submitting to QC, approving):
// a notice with an Undo button for as long as the server allows (UNDO_SECONDS, 10 s by
// default). U or Ctrl+Z (outside text fields) press it. The server keeps the truth: until the
// window passes the change is the person's own (a submission is not in the review queue
// yet), an undo after it is refused, and a reload offers the undo again for what is left.

import { csrfToken } from "./redline.js";

let current = null;

function isTyping(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
  if (target.tagName !== "INPUT") return false;
  return !["checkbox", "radio", "button", "submit", "reset", "range", "file", "color"].includes(target.type);
}

/** Hide the undo notice, if one shows. */
export function dismissUndo() {
  if (!current) return;
  clearInterval(current.timer);
  current.toast.remove();
  current = null;
}

/**
 * Offer to undo the last decision on annotation `annotationId` for `seconds`.
 * `prepare` (optional, async) runs first and may return false to stop (e.g. unsaved work);
 * `onUndone(workspace)` gets the server's answer; `onRefused(message)` says why not.
 * `host` (optional): the element to show the notice in, instead of floating over the page.
 */
export function offerUndo({ annotationId, seconds, message, prepare, onUndone, onRefused, host = null }) {
  dismissUndo();
  if (!(seconds > 0)) return;
  const end = Date.now() + seconds * 1000;
  const left = document.createElement("span");
  left.className = "undo-left";
  const button = document.createElement("button");
  button.type = "button";
  button.id = "undo-button";
  button.setAttribute("aria-keyshortcuts", "u Control+z");
  button.append("Undo ");
  const key = document.createElement("kbd");
  key.setAttribute("aria-hidden", "true");
  key.textContent = "U";
  button.append(key);
  const text = document.createElement("span");
  text.textContent = message;
  const toast = document.createElement("div");
  toast.className = "undo-toast";
  toast.id = "undo-toast";
  toast.setAttribute("role", "status");
  toast.dataset.action = message;
  toast.append(text, " ", left, " ", button);
  // In `host` (a place kept for it in the page, where it covers nothing), else floating.
  if (host) {
    toast.classList.add("undo-inline");
    host.append(toast);
  } else {
    document.body.append(toast);
  }

  const tick = () => {
    const remaining = Math.ceil((end - Date.now()) / 1000);
    if (remaining <= 0) {
      dismissUndo();
      return;
    }
    left.textContent = `(${remaining} s to undo)`;
  };
  current = { toast, timer: setInterval(tick, 250), undo: null };
  tick();

  current.undo = async () => {
    if (button.disabled) return;
    button.disabled = true;
    try {
      if (prepare && (await prepare()) === false) {
        button.disabled = false;
        return;
      }
      const response = await fetch(`/api/annotations/${annotationId}/undo/`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        credentials: "same-origin",
        body: "{}",
      });
      const answer = await response.json().catch(() => ({ detail: response.statusText }));
      dismissUndo();
      if (response.ok) onUndone(answer);
      else onRefused(answer.detail || `The server refused to undo (${response.status}).`);
    } catch {
      button.disabled = false;
      onRefused("No connection: the undo did not reach the server. Try again while the notice shows.");
    }
  };
  button.addEventListener("click", () => current && current.undo());
}

// Captured before the page's own shortcuts: while the notice shows, U and Ctrl+Z undo.
document.addEventListener("keydown", (event) => {
  if (!current || isTyping(event.target) || event.altKey) return;
  const control = event.ctrlKey || event.metaKey;
  const key = event.key.toLowerCase();
  if ((key === "u" && !control && !event.shiftKey) || (key === "z" && control && !event.shiftKey)) {
    event.preventDefault();
    event.stopPropagation();
    current.undo();
  }
}, true);

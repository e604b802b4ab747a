// The study's guidelines beside the item (the workspace and the QC review page): the side panel
// opened by the Guidelines button or the G key (the pages' own key handlers call toggle), and the
// "guidelines updated" notice, dismissed with POST /api/studies/<slug>/guidelines/dismiss/.

import { csrfToken } from "./redline.js";

const panel = document.getElementById("guidelines-panel");
const button = document.getElementById("guidelines-button");
let returnFocus = null;

export function isOpen() {
  return Boolean(panel) && !panel.hidden;
}

export function toggle(show = !isOpen()) {
  if (!panel) return;
  if (show && !isOpen()) returnFocus = document.activeElement;
  panel.hidden = !show;
  if (button) button.setAttribute("aria-expanded", String(show));
  if (show) panel.focus();
  else if (returnFocus && document.contains(returnFocus)) returnFocus.focus();
}

async function dismiss(notice) {
  const response = await fetch(`/api/studies/${panel.dataset.study}/guidelines/dismiss/`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({ version: Number(notice.dataset.version) }),
  });
  if (response.ok) notice.remove();
}

if (panel) {
  button?.addEventListener("click", () => toggle());
  document.getElementById("guidelines-close").addEventListener("click", () => toggle(false));
  for (const opener of document.querySelectorAll("[data-guidelines-open]")) {
    opener.addEventListener("click", () => toggle(true));
  }
  const notice = document.getElementById("guidelines-notice");
  document.getElementById("guidelines-dismiss")?.addEventListener("click", () => dismiss(notice));
}

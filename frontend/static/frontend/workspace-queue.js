// The annotator's queue page: "Start next" opens the next item through the REST API
// (returned items first, then work in progress, then new ones).

import { csrfToken } from "./redline.js";

// The bar's width comes from a data attribute: pages carry no inline styles (CSP).
for (const bar of document.querySelectorAll("[data-percent]")) bar.style.width = `${bar.dataset.percent}%`;

const button = document.getElementById("start-next");
const result = document.getElementById("start-result");

button?.addEventListener("click", async () => {
  button.disabled = true;
  result.textContent = "Opening…";
  try {
    const response = await fetch(button.dataset.endpoint, {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({ detail: response.statusText }));
    if (response.ok) {
      window.location.assign(answer.url);
      return;
    }
    result.textContent = answer.detail || `Could not open the next item (${response.status}).`;
  } catch {
    result.textContent = "The server cannot be reached; try again in a moment.";
  }
  button.disabled = false;
});

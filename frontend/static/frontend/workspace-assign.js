// The study page's assignment form (study admins): assigns the study's captions to the
// chosen annotators under the chosen design, through the assignments API.

import { csrfToken } from "./redline.js";

const form = document.getElementById("assign-form");
const result = document.getElementById("assign-result");

form?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const annotators = [...form.querySelectorAll("input[name=annotators]:checked")].map((box) => box.value);
  if (!annotators.length) {
    result.textContent = "Choose at least one annotator.";
    return;
  }
  const percent = Number(form.elements.overlap.value || 0);
  result.textContent = "Assigning…";
  const response = await fetch(form.dataset.endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({
      annotators, overlap_share: percent / 100, design: form.elements.design.value,
      gap: Number(form.elements.gap.value || 0),
    }),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  let message = answer.detail || JSON.stringify(answer);
  if (response.ok && answer.skipped) {
    const why = Object.entries(answer.reasons || {}).map(([reason, n]) => `${n}: ${reason}`).join("; ");
    message += ` ${answer.skipped} left unassigned (${why}).`;
  }
  result.textContent = message;
  result.classList.toggle("error", !response.ok);
});

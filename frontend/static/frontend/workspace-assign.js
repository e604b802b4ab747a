// The study page's assignment form (study admins): round-robin assignment of the
// study's captions to the chosen annotators, through the assignments API.

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
    body: JSON.stringify({ annotators, overlap_share: percent / 100 }),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  let message = answer.detail || JSON.stringify(answer);
  if (response.ok && answer.skipped) message += ` ${answer.skipped} could not go to a second annotator.`;
  result.textContent = message;
  result.classList.toggle("error", !response.ok);
});

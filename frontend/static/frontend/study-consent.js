// The Consent section of the study's Guidelines page: the Markdown saved with
// PUT /api/studies/<slug>/consent/ (the same API as any client), then shown again as saved (the
// server renders the preview, sanitised). The text reaches the page as a value, never as markup.

import { csrfToken } from "./redline.js";

const data = JSON.parse(document.getElementById("consent-data").textContent);
const $ = (id) => document.getElementById(id);
const text = $("c-text");
const encoder = new TextEncoder();
const SAVED = `consent-saved-${data.study}`;

function showSize() {
  const size = encoder.encode(text.value).length;
  $("c-size").textContent = `now ${size.toLocaleString("en")} bytes`;
  $("c-size").classList.toggle("over", size > data.limits.text_max_bytes);
}

async function save(event) {
  event.preventDefault();
  $("e-consent").textContent = "";
  $("c-result").textContent = "Saving…";
  const response = await fetch(`/api/studies/${data.study}/consent/`, {
    method: "PUT",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({ text: text.value }),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) {
    if (answer.text) $("e-consent").textContent = [].concat(answer.text).join(" ");
    $("c-result").textContent = answer.text ? "Not saved: see the field marked." : `Not saved: ${answer.detail || response.status}`;
    return;
  }
  sessionStorage.setItem(SAVED, answer.created ? `Saved as version ${answer.version}.` : `Saved (version ${answer.version}).`);
  location.reload();
}

if (sessionStorage.getItem(SAVED)) {
  $("c-result").textContent = sessionStorage.getItem(SAVED);
  sessionStorage.removeItem(SAVED);
}
text.value = data.text;
text.addEventListener("input", showSize);
showSize();
if ($("c-save")) $("consent-form").addEventListener("submit", save);
$("consent-form").dataset.ready = "true";

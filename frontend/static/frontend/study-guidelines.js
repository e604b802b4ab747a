// The study's Guidelines page: the Markdown and the failure-mode examples, saved with
// PUT /api/studies/<slug>/guidelines/ (the same API as any client), then shown again as saved
// (the server renders the preview, sanitised). Texts are untrusted: they reach the page as values
// and textContent.

import { h } from "./workspace-dom.js";
import { csrfToken } from "./redline.js";

const data = JSON.parse(document.getElementById("guidelines-data").textContent);
const $ = (id) => document.getElementById(id);
const text = $("g-text");
const list = $("g-examples");
const encoder = new TextEncoder();
const SAVED = `guidelines-saved-${data.study}`;

function showSize() {
  const size = encoder.encode(text.value).length;
  $("g-size").textContent = `now ${size.toLocaleString("en")} bytes`;
  $("g-size").classList.toggle("over", size > data.limits.text_max_bytes);
}

let rows = 0; // numbers the rows' field ids: never reused, even after a row is removed

function exampleRow(example = {}) {
  const n = ++rows;
  const id = (name) => `g-example-${n}-${name}`;
  const field = (name, label, rows) => h("div", { class: "field" },
    h("label", { for: id(name), text: label }),
    h("textarea", { id: id(name), class: `ge-${name}`, rows, value: example[name] || "" }));
  const row = h("li", { class: "guideline-example" },
    h("div", { class: "field" },
      h("label", { for: id("mode"), text: "Failure mode" }),
      h("select", { id: id("mode"), class: "ge-mode" },
        data.modes.map((mode) => h("option", { value: mode.key, text: mode.name, selected: mode.key === example.mode }))),
    ),
    field("excerpt", "Caption excerpt", 2),
    field("correction", "Correction", 2),
    field("why", "Why this mode", 2),
    h("button", { type: "button", class: "link ge-remove", text: "Remove this example", onclick: () => row.remove() }),
  );
  const select = row.querySelector("select");
  if (example.mode) select.value = example.mode;
  return row;
}

function examples() {
  return [...list.querySelectorAll(".guideline-example")].map((row) => ({
    mode: row.querySelector(".ge-mode").value,
    excerpt: row.querySelector(".ge-excerpt").value,
    correction: row.querySelector(".ge-correction").value,
    why: row.querySelector(".ge-why").value,
  }));
}

async function save(event) {
  event.preventDefault();
  for (const name of ["text", "examples"]) $(`e-${name}`).textContent = "";
  $("g-result").textContent = "Saving…";
  const response = await fetch(`/api/studies/${data.study}/guidelines/`, {
    method: "PUT",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({ text: text.value, examples: examples() }),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) {
    const fields = Object.entries(answer).filter(([name]) => name === "text" || name === "examples");
    for (const [name, messages] of fields) $(`e-${name}`).textContent = [].concat(messages).join(" ");
    $("g-result").textContent = fields.length ? "Not saved: see the fields marked." : `Not saved: ${answer.detail || response.status}`;
    return;
  }
  // Saved: the page shows the version as annotators see it (with its examples) and in the list.
  sessionStorage.setItem(SAVED, answer.created ? `Saved as version ${answer.version}.` : `Saved (version ${answer.version}).`);
  location.reload();
}

if (sessionStorage.getItem(SAVED)) {
  $("g-result").textContent = sessionStorage.getItem(SAVED);
  sessionStorage.removeItem(SAVED);
}
text.value = data.text;
text.addEventListener("input", showSize);
showSize();
for (const example of data.examples) list.append(exampleRow(example));
$("g-add-example").addEventListener("click", () => {
  const row = exampleRow();
  list.append(row);
  row.querySelector("select").focus();
});
if ($("g-save")) $("guidelines-form").addEventListener("submit", save);
document.getElementById("guidelines-form").dataset.ready = "true";

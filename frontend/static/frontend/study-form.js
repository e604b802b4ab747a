// The New study page and a study's settings page: checks each field as it is typed (the
// server's rules, study-checks.js), suggests the slug from the name and asks the server whether
// it is free, shows the chosen taxonomy's definitions, then POSTs (new) or PATCHes (settings)
// through the REST API, showing the server's refusals under their fields.

import { csrfToken } from "./redline.js";
import {
  parseNearTotal, parsePercent, parseThresholds, parseWhole, slugProblem, slugSuggest, textProblem,
} from "./study-checks.js";

const data = JSON.parse(document.getElementById("study-form-data").textContent);
const form = document.getElementById("study-form");
const limits = data.limits;
const editing = data.editing;
const field = (name) => form.elements[name];
let slugTouched = Boolean(editing);
let slugTaken = null;

function showError(name, message) {
  const place = document.getElementById(`e-${name}`);
  if (place) place.textContent = message || "";
  const input = field(name);
  if (input) input.setAttribute("aria-invalid", message ? "true" : "false");
}

// Each field: its value for the API, or {problem}.
const either = (problem, value) => (problem ? { problem } : { value });
const READERS = {
  name: (text) => either(textProblem(text, "name", limits.name_max, { required: true }), text.trim()),
  slug: (text) => either(
    slugProblem(text, limits) || (slugTaken === text ? `A study with slug '${text}' already exists; choose another.` : null),
    text,
  ),
  description: (text) => either(textProblem(text, "description", limits.description_max), text.trim()),
  taxonomy: (text) => (text ? { value: Number(text) } : { problem: "Pick a taxonomy version." }),
  caption_language: (text) => ({ value: text }),
  word_thresholds: (text) => parseThresholds(text, limits),
  near_total_cut: (text) => parseNearTotal(text),
  length_band: (text) => parsePercent(text, "length band", limits.length_band_max),
  assignment_design: (text) => ({ value: text }),
  spread_gap: (text) => parseWhole(text, "spread gap", 0, limits.spread_gap_max),
  overlap_share: (text) => parsePercent(text, "overlap", 1),
  undo_seconds: (text) => parseWhole(text, "undo time", 0, limits.undo_seconds_max, { empty: true }),
  // A box: its state, not its text.
  erase_on_withdrawal: () => ({ value: field("erase_on_withdrawal").checked }),
};

function check(name) {
  const result = READERS[name](field(name).value);
  showError(name, result.problem);
  return result;
}

function fill() {
  const values = data.values;
  const select = field("taxonomy");
  for (const taxonomy of data.taxonomies) {
    const option = document.createElement("option");
    option.value = String(taxonomy.id);
    option.textContent = `${taxonomy.label}${taxonomy.frozen ? " (frozen: in use)" : ""}`;
    select.appendChild(option);
  }
  if (values.taxonomy) select.value = String(values.taxonomy);
  field("name").value = values.name;
  field("slug").value = values.slug;
  field("description").value = values.description;
  field("caption_language").value = values.caption_language;
  field("word_thresholds").value = values.word_thresholds.join(", ");
  field("near_total_cut").value = String(values.near_total_cut);
  field("length_band").value = String(Math.round(values.length_band * 10000) / 100);
  field("assignment_design").value = values.assignment_design;
  field("spread_gap").value = String(values.spread_gap);
  field("overlap_share").value = String(Math.round(values.overlap_share * 10000) / 100);
  field("undo_seconds").value = values.undo_seconds === null ? "" : String(values.undo_seconds);
  field("erase_on_withdrawal").checked = Boolean(values.erase_on_withdrawal);
  showModes();
  preview();
}

function showModes() {
  const taxonomy = data.taxonomies.find((t) => String(t.id) === field("taxonomy").value);
  const list = document.getElementById("taxonomy-modes");
  list.replaceChildren();
  for (const mode of taxonomy ? taxonomy.modes : []) {
    const term = document.createElement("dt");
    term.textContent = `${mode.name} (${mode.key})${mode.level === "caption" ? " · caption level only" : ""}`;
    const definition = document.createElement("dd");
    definition.textContent = `${mode.definition} ${mode.decision_test}`;
    list.append(term, definition);
  }
}

function preview() {
  document.getElementById("slug-preview").textContent = field("slug").value || "…";
}

let slugRequest = 0;
async function askSlug() {
  const slug = field("slug").value;
  if (editing || slugProblem(slug, limits)) return;
  const mine = ++slugRequest;
  const response = await fetch(`/api/studies/slug-check/?slug=${encodeURIComponent(slug)}`, { credentials: "same-origin" });
  if (!response.ok || mine !== slugRequest) return;
  const answer = await response.json();
  slugTaken = answer.available ? null : slug;
  check("slug");
}

field("name").addEventListener("input", () => {
  if (!slugTouched) {
    field("slug").value = slugSuggest(field("name").value, limits.slug_max);
    preview();
    if (field("slug").value) { check("slug"); askSlug(); }
  }
  check("name");
});
field("slug").addEventListener("input", () => {
  slugTouched = true;
  preview();
  check("slug");
  askSlug();
});
field("taxonomy").addEventListener("change", showModes);
for (const name of Object.keys(READERS)) {
  if (name !== "name" && name !== "slug") field(name).addEventListener("input", () => check(name));
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const result = document.getElementById("study-result");
  const body = {};
  let first = null;
  for (const name of Object.keys(READERS)) {
    if (editing && name === "slug") continue;
    const read = check(name);
    if (read.problem) first = first || name;
    else body[name] = read.value;
  }
  if (first) {
    result.textContent = "Some fields need fixing (see the messages under them).";
    result.className = "error";
    field(first).focus();
    return;
  }
  result.textContent = editing ? "Saving…" : "Creating…";
  result.className = "";
  const response = await fetch(editing ? `/api/studies/${editing}/` : "/api/studies/", {
    method: editing ? "PATCH" : "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) {
    for (const [name, messages] of Object.entries(answer)) {
      if (name !== "detail" && READERS[name]) showError(name, [].concat(messages).join(" "));
    }
    result.textContent = answer.detail || "Refused.";
    result.className = "error";
    return;
  }
  if (editing) {
    result.textContent = "Saved.";
  } else {
    window.location.assign(`/studies/${answer.slug}/members/`);
  }
});

fill();
// Filled and listening: what someone types from now on stays (tests wait for this too).
form.dataset.ready = "true";

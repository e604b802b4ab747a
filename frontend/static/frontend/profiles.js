// The failure-profile page: "Build profile" starts an export job, the page follows its progress,
// then shows the per-model profile table, the leaderboard, rejection rate by exposure (was the
// study anchored?), the figures and every file to download.
// Text from the server is only ever set with textContent.
import { csrfToken } from "./redline.js";

const form = document.getElementById("profile-form");
const button = document.getElementById("build-profile");
const progress = document.getElementById("profile-progress");
const bar = document.getElementById("profile-progress-bar");
const stepText = document.getElementById("profile-step");
const errorText = document.getElementById("profile-error");
const results = document.getElementById("profile-results");
const deleteRow = document.getElementById("profile-delete-row");
const deleteButton = document.getElementById("profile-delete");
const UNFINISHED = new Set(["queued", "running"]);
const POLL_MS = 1000;
let timer = null;

function element(tag, text = "", attributes = {}) {
  const node = document.createElement(tag);
  if (text) node.textContent = text;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function showError(message) {
  errorText.textContent = message;
  errorText.hidden = !message;
}

function display(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number") {
    if (Number.isInteger(value)) return String(value);
    return String(Number(value.toPrecision(4)));
  }
  return String(value);
}

function renderTable(table, tableId = "profile-main-table", captionId = "profile-main-caption") {
  const head = document.querySelector(`#${tableId} thead`);
  const body = document.querySelector(`#${tableId} tbody`);
  document.getElementById(captionId).textContent = table ? table.caption : "";
  head.replaceChildren();
  body.replaceChildren();
  if (!table) return;
  const row = element("tr");
  for (const column of table.columns) row.append(element("th", column));
  head.append(row);
  if (table.not_computable) {
    const td = element("td", table.not_computable, { class: "muted", "data-not-computable": "" });
    td.colSpan = Math.max(table.columns.length, 1);
    const tr = element("tr");
    tr.append(td);
    body.append(tr);
  }
  for (const record of table.rows) {
    const tr = element("tr");
    for (const column of table.columns) {
      const value = record[column];
      const td = element("td", display(value));
      if (typeof value === "number") td.className = "num";
      tr.append(td);
    }
    body.append(tr);
  }
}

function renderFigures(figures, failed, notComputable) {
  const container = document.getElementById("profile-figures");
  container.replaceChildren();
  for (const figure of figures) {
    const node = element("figure", "", { "data-figure": figure.name });
    node.append(element("img", "", { src: figure.png_url, alt: figure.caption, loading: "lazy" }));
    const caption = element("figcaption", `${figure.name}: ${figure.caption} `);
    caption.append(element("a", "SVG", { href: `${figure.svg_url}` }));
    node.append(caption);
    container.append(node);
  }
  for (const [name, reason] of Object.entries(failed || {})) {
    container.append(element("p", `${name} could not be drawn: ${reason}`, { class: "muted" }));
  }
  for (const [name, reason] of Object.entries(notComputable || {})) {
    container.append(element("p", `${name}: ${reason}`,
      { class: "muted", "data-not-computable": name }));
  }
}

function renderFiles(job) {
  const zip = document.getElementById("profile-zip");
  zip.href = job.zip.url;
  zip.textContent = `Every file (${job.zip.name})`;
  document.getElementById("profile-report").href = job.report_url;
  const options = job.options;
  document.getElementById("profile-made").textContent =
    `Made ${new Date(job.finished_at).toLocaleString()} · ${options.resamples} resamples ` +
    `(${options.adjusted_resamples} adjusted), seed ${options.seed}` +
    (options.paired_only ? " · paired subset only" : "");
  const list = document.getElementById("profile-files");
  list.replaceChildren();
  for (const file of job.files) {
    const item = element("li");
    item.append(element("a", file.name, { href: `${file.url}?download=1` }));
    list.append(item);
  }
}

let current = null;  // the export the page shows

function render(job) {
  if (!job) return;
  current = job;
  progress.hidden = false;
  bar.value = job.percent;
  const running = UNFINISHED.has(job.state);
  button.disabled = running;
  deleteRow.hidden = running;  // a queued or running export cannot be deleted yet
  if (job.state === "failed") {
    stepText.textContent = "The export failed.";
    showError(job.error || "The export failed.");
  } else {
    showError("");
    stepText.textContent = job.state === "done"
      ? "Done."
      : `${job.state === "queued" ? "Queued" : "Working"}: ${job.step} (${job.done}/${job.total})`;
  }
  if (job.state === "done") {
    renderFiles(job);
    renderTable(job.main_table);
    renderTable(job.leaderboard, "profile-leaderboard", "profile-leaderboard-caption");
    renderTable(job.judge_agreement, "profile-agreement", "profile-agreement-caption");
    renderTable(job.rejection_by_exposure, "profile-exposure", "profile-exposure-caption");
    // Only a study with hidden gold checks has one (tables/annotator_sensitivity).
    renderTable(job.annotator_sensitivity, "profile-sensitivity", "profile-sensitivity-caption");
    document.getElementById("profile-sensitivity-section").hidden = !job.annotator_sensitivity;
    renderFigures(job.figures, job.figures_failed, job.not_computable);
    results.hidden = false;
  }
  clearTimeout(timer);
  if (running) timer = setTimeout(() => follow(job.url), POLL_MS);
}

async function follow(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) {
    showError(`Could not follow the export (${response.status}).`);
    button.disabled = false;
    return;
  }
  render(await response.json());
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  showError("");
  button.disabled = true;
  stepText.textContent = "Starting…";
  progress.hidden = false;
  const data = new FormData(form);
  const body = {
    resamples: data.get("resamples"),
    adjusted_resamples: data.get("adjusted_resamples"),
    seed: data.get("seed"),
    paired_only: data.get("paired_only") === "on",
  };
  const response = await fetch(form.action, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    showError(answer.detail || `Could not start the export (${response.status}).`);
    stepText.textContent = "";
    button.disabled = false;
    return;
  }
  render(answer);
});

// Deletes an ended export after asking; returns whether it is gone.
async function deleteExport(url, what) {
  if (!window.confirm(`Delete ${what}? Its files, zip and report are deleted for good.`)) return false;
  const response = await fetch(url, {
    method: "DELETE",
    credentials: "same-origin",
    headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
  });
  if (response.ok || response.status === 404) return true;  // 404: deleted meanwhile
  const answer = await response.json().catch(() => ({}));
  showError(answer.detail || `Could not delete the export (${response.status}).`);
  return false;
}

deleteButton.addEventListener("click", async () => {
  if (current && await deleteExport(current.url, "this export")) window.location.reload();
});

const earlier = document.getElementById("profile-earlier");
if (earlier) {
  earlier.addEventListener("click", async (event) => {
    const target = event.target.closest("button.profile-delete");
    if (!target) return;
    const item = target.closest("li");
    if (!await deleteExport(target.dataset.url, "this earlier export")) return;
    item.remove();
    if (!earlier.children.length) document.getElementById("profile-earlier-section").remove();
  });
}

const serverError = errorText.textContent;
render(JSON.parse(document.getElementById("profile-job").textContent));
if (serverError) showError(serverError);  // the form was posted without this script
form.dataset.ready = "true";

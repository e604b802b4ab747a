// The study page's scoring jobs (admins and researchers): a table that follows running jobs, and "Score now".
// Text from the server is only ever set with textContent.
import { csrfToken } from "./redline.js";

const section = document.getElementById("score-jobs");
const body = document.querySelector("#score-job-table tbody");
const button = document.getElementById("score-now");
const result = document.getElementById("score-now-result");
const endpoint = section.dataset.endpoint;
const UNFINISHED = new Set(["queued", "running"]);
let timer = null;

function cell(text, className = "") {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

function row(job) {
  const tr = document.createElement("tr");
  tr.dataset.job = job.id;
  tr.append(cell(`#${job.id}`), cell(job.kind === "verdict" ? `verdict (annotation ${job.annotation})` : "study"));
  const status = cell("");
  const badge = document.createElement("span");
  badge.className = `badge${job.status === "failed" || job.status === "partial" ? " warn" : ""}`;
  badge.textContent = job.status;
  status.appendChild(badge);
  tr.append(status, cell(`${job.progress.done}/${job.progress.total} (${job.progress.percent}%)`, "num"));
  const errors = cell("", "error");
  for (const [metric, message] of Object.entries(job.errors || {})) {
    const line = document.createElement("div");
    line.textContent = `${metric}: ${message}`;
    errors.appendChild(line);
  }
  tr.append(errors, cell(`${when(job.created_at)}${job.requested_by ? ` by ${job.requested_by}` : ""}`), cell(when(job.finished_at)));
  return tr;
}

async function refresh() {
  const response = await fetch(endpoint, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) {
    body.replaceChildren(cell(`Could not load the jobs (${response.status}).`, "error"));
    return;
  }
  const page = await response.json();
  const jobs = page.results || page;
  if (!jobs.length) {
    const td = cell("No scoring jobs yet.", "muted");
    td.colSpan = 7;
    const tr = document.createElement("tr");
    tr.appendChild(td);
    body.replaceChildren(tr);
  } else {
    body.replaceChildren(...jobs.map(row));
  }
  clearTimeout(timer);
  if (jobs.some((job) => UNFINISHED.has(job.status))) timer = setTimeout(refresh, 2000);
}

button.addEventListener("click", async () => {
  button.disabled = true;
  result.textContent = "Starting…";
  const response = await fetch(endpoint, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify({}),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  result.textContent = response.ok ? `Job #${answer.id} ${answer.status}.` : answer.detail || "Refused.";
  result.classList.toggle("error", !response.ok);
  button.disabled = false;
  refresh();
});

refresh();

// Import forms on the study page: each posts its file to the REST API and shows what was stored
// or every error the import reported. Captions are imported by a background job: the page shows
// its progress bar, following the job until it ends, and resumes it after a reload.
// Text from the server (file names, errors quoting captions) is only ever set with textContent.
import { csrfToken } from "./redline.js";

const result = document.getElementById("import-result");
const jobList = document.getElementById("caption-import-jobs");
const POLL_MS = 1000;
const ERRORS_SHOWN = 200;
const UNFINISHED = new Set(["queued", "running"]);
const timers = new Map();

function count(number) {
  return Number(number).toLocaleString("en");
}

function element(tag, className, text = "") {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

function queryOf(form) {
  const query = new URLSearchParams();
  for (const field of form.elements) {
    if (!field.name || field.name === "file" || field.tagName === "BUTTON") continue;
    if (field.type === "checkbox") { if (field.checked) query.set(field.name, "1"); }
    else if (field.value) query.set(field.name, field.value);
  }
  return query;
}

async function send(form) {
  const body = new FormData();
  body.append("file", form.elements.file.files[0]);
  const response = await fetch(`${form.dataset.endpoint}?${queryOf(form)}`, {
    method: "POST", body, headers: { "X-CSRFToken": csrfToken() }, credentials: "same-origin",
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  return { response, answer };
}

function showResult(answer, ok) {
  const lines = [answer.detail || JSON.stringify(answer)];
  for (const error of answer.errors || []) lines.push(`• ${error}`);
  result.textContent = lines.join("\n");
  result.classList.toggle("error", !ok);
}

// ------------------------------------------------------------------ caption import jobs

function statusText(job) {
  if (job.state === "queued") return "Queued…";
  if (job.state === "running" && job.phase === "waiting") return "Waiting for its turn: a study's imports run one at a time…";
  if (job.state === "running" && job.phase === "validating") return "Checking every caption…";
  if (job.state === "running" || job.state === "done") {
    return `${count(job.stored)} of ${count(job.total)} captions stored${job.state === "done" ? "." : ""}`;
  }
  return job.detail;
}

function jobNode(job) {
  let node = jobList.querySelector(`[data-job="${job.id}"]`);
  if (node) return node;
  node = element("article", "import-job");
  node.dataset.job = job.id;
  const title = element("h4", "", job.file_name);
  title.append(" ", element("span", "badge import-job-state"));
  if (job.requested_by) title.append(" ", element("span", "muted", `by ${job.requested_by}`));
  const bar = element("progress", "import-job-bar");
  bar.setAttribute("aria-label", `Import of ${job.file_name}`);
  const status = element("p", "import-job-status");
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  node.append(title, bar, status, element("div", "import-job-report"), element("ul", "import-job-errors error"));
  jobList.append(node);
  return node;
}

function renderBar(bar, job) {
  bar.hidden = job.state === "refused" || job.state === "failed";
  if (job.state === "done" || (job.state === "running" && job.phase === "storing" && job.total)) {
    bar.max = Math.max(job.total, 1);
    bar.value = job.state === "done" ? bar.max : job.stored;
  } else {
    bar.removeAttribute("value");  // indeterminate: queued, waiting or checking
  }
}

function renderReport(container, job) {
  container.replaceChildren();
  if (job.state !== "done" || !job.report) return;
  const { report } = job;
  const parts = [`Stored ${count(report.stored)} caption(s)`];
  if (report.kept_invalid) parts.push(`${count(report.kept_invalid)} kept invalid`);
  let text = parts.join(", ");
  if (report.models_created.length) text += `; new models: ${report.models_created.join(", ")}`;
  container.append(element("p", "", `${text}.`));
  const reload = element("a", "", "Reload the page to see them.");
  reload.href = window.location.pathname;
  container.append(reload);
}

function renderErrors(list, job) {
  const errors = job.state === "done" ? job.report?.errors || [] : job.errors || [];
  const items = errors.slice(0, ERRORS_SHOWN).map((error) => element("li", "", error));
  if (errors.length > ERRORS_SHOWN) {
    items.push(element("li", "muted", `… and ${count(errors.length - ERRORS_SHOWN)} more (the job's API answer lists them all).`));
  }
  list.classList.toggle("error", job.state !== "done");
  list.replaceChildren(...items);
}

function render(job) {
  const node = jobNode(job);
  node.dataset.state = job.state;
  const badge = node.querySelector(".import-job-state");
  badge.textContent = job.state;
  badge.classList.toggle("warn", job.state === "refused" || job.state === "failed");
  renderBar(node.querySelector(".import-job-bar"), job);
  const status = node.querySelector(".import-job-status");
  const text = statusText(job);
  if (status.textContent !== text) status.textContent = text;  // announce changes only
  renderReport(node.querySelector(".import-job-report"), job);
  renderErrors(node.querySelector(".import-job-errors"), job);
}

async function follow(job) {
  clearTimeout(timers.get(job.id));
  render(job);
  if (!UNFINISHED.has(job.state)) return;
  timers.set(job.id, setTimeout(async () => {
    const response = await fetch(job.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .catch(() => null);
    // A lost connection or a restarting server: keep following the job as it was.
    follow(response && response.ok ? await response.json() : job);
  }, POLL_MS));
}

for (const form of document.querySelectorAll("#imports form")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    result.textContent = form.dataset.job ? "Sending the file…" : "Importing…";
    result.classList.remove("error");
    button.disabled = true;  // one press, one import
    let sent;
    try {
      sent = await send(form);
    } catch (error) {
      showResult({ detail: `Could not send the file: ${error.message}` }, false);
      return;
    } finally {
      button.disabled = false;
    }
    const { response, answer } = sent;
    if (form.dataset.job && response.ok) {
      result.textContent = "";
      form.elements.file.value = "";
      follow(answer);
      return;
    }
    showResult(answer, response.ok);
    if (response.ok) setTimeout(() => window.location.reload(), 1500);
  });
}

for (const job of JSON.parse(document.getElementById("caption-import-jobs-data").textContent)) follow(job);

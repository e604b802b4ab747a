// The QC review queue: filters kept in the address, a table from the review-queue API,
// a Claim button that locks an item for this reviewer before opening it, and "Claim next"
// (the next item in the chosen order). The review page goes on in the same order.
// Text from the server is only ever set with textContent.

import { csrfToken } from "./redline.js";

const config = JSON.parse(document.getElementById("review-queue-config").textContent);
const filters = document.getElementById("filters");
const body = document.querySelector("#queue tbody");
const summary = document.getElementById("summary");
const notice = document.getElementById("notice");

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function when(iso) {
  if (!iso) return "—";
  return new Date(iso).toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}

function clockTime(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function tell(message, kind = "error") {
  notice.hidden = !message;
  notice.textContent = message || "";
  notice.className = `review-notice ${kind}`;
}

function query() {
  const params = new URLSearchParams();
  for (const field of filters.elements) if (field.name && field.value) params.set(field.name, field.value);
  return params;
}

function restoreFilters() {
  const params = new URLSearchParams(window.location.search);
  for (const field of filters.elements) if (field.name && params.has(field.name)) field.value = params.get(field.name);
}

function claimExpired(item) {
  return item.claim_expires_at && new Date(item.claim_expires_at) < new Date();
}

function stateCell(item) {
  const cell = element("td", "state");
  const badge = element("span", `badge state-${item.state}`, item.state.replace("_", " "));
  cell.appendChild(badge);
  if (item.state === "in_review" && item.reviewer) {
    const mine = item.reviewer === config.me;
    const text = claimExpired(item)
      ? ` claim by ${item.reviewer} expired`
      : ` ${mine ? "claimed by you" : `by ${item.reviewer}`} until ${clockTime(item.claim_expires_at)}`;
    cell.appendChild(element("span", "muted", text));
  }
  return cell;
}

function riskCell(item) {
  const cell = element("td", "risk");
  const score = element("span", item.risk >= 1 ? "risk-score high" : "risk-score", item.risk.toFixed(2));
  cell.appendChild(score);
  for (const reason of item.risk_reasons) cell.appendChild(element("span", "badge warn risk-reason", reason));
  return cell;
}

function actionCell(item) {
  const cell = element("td", "action");
  const mine = item.state === "in_review" && item.reviewer === config.me && !claimExpired(item);
  const claimable = item.state === "submitted" || (item.state === "in_review" && (claimExpired(item) || mine));
  if (config.can_review && claimable && !mine) {
    const button = element("button", "primary", "Claim");
    button.type = "button";
    button.dataset.claim = item.id;
    button.setAttribute("aria-label", `Claim ${item.clip} (${item.model})`);
    cell.appendChild(button);
  } else {
    const link = element("a", null, mine ? "Continue" : "Open");
    link.href = `${item.url}${orderQuery()}`;
    cell.appendChild(link);
  }
  return cell;
}

function row(item) {
  const tr = element("tr");
  tr.dataset.id = item.id;
  tr.dataset.state = item.state;
  tr.appendChild(element("td", "clip", item.clip));
  tr.appendChild(element("td", null, item.model));
  tr.appendChild(element("td", null, item.annotator));
  tr.appendChild(element("td", null, when(item.submitted_at)));
  tr.appendChild(riskCell(item));
  tr.appendChild(stateCell(item));
  tr.appendChild(actionCell(item));
  return tr;
}

const more = document.getElementById("more");
let nextPage = null;

async function fetchPage(params) {
  const response = await fetch(`${config.queue_url}?${params}`, { credentials: "same-origin" });
  const data = await response.json().catch(() => ({ detail: response.statusText }));
  if (!response.ok) {
    tell(data.detail || `The queue could not be loaded (${response.status}).`);
    return null;
  }
  nextPage = data.next;
  more.hidden = !nextPage;
  return data;
}

async function loadMore() {
  if (!nextPage) return;
  const params = query();
  params.set("after", nextPage);
  const data = await fetchPage(params);
  if (data) body.append(...data.items.map(row));
}

async function load() {
  const params = query();
  const search = params.toString();
  history.replaceState(null, "", `${window.location.pathname}${search ? `?${search}` : ""}`);
  const data = await fetchPage(params);
  if (!data) return;
  body.replaceChildren(...data.items.map(row));
  if (!data.items.length) {
    const empty = element("td", "muted", "Nothing to review with these filters.");
    empty.colSpan = 7;
    const tr = element("tr");
    tr.appendChild(empty);
    body.appendChild(tr);
  }
  const order = data.order === "oldest" ? "oldest first" : "risky first";
  const shown = data.next ? ` (the first ${data.items.length} shown)` : "";
  const count = data.count_capped ? `More than ${data.count.toLocaleString("en")}` : data.count.toLocaleString("en");
  const plural = data.count === 1 && !data.count_capped ? "" : "s";
  summary.textContent = `${count} item${plural}, ${order}${shown}.`;
  document.body.dataset.loaded = "true";
}

async function claim(id, button) {
  button.disabled = true;
  const response = await fetch(`/api/annotations/${id}/claim/`, {
    method: "POST",
    headers: { "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
  });
  const data = await response.json().catch(() => ({ detail: response.statusText }));
  if (response.ok) {
    window.location.assign(`/review/${id}/${orderQuery()}`);
    return;
  }
  // A 409 naming the study's state is no race lost: the study is not open for reviews.
  tell(response.status === 409 && !data.state ? `Someone was quicker. ${data.detail}` : data.detail);
  await load();
}

// The review page goes on in this order (risky first unless told otherwise).
function orderQuery() {
  const order = filters.elements.order.value || "risk";
  return order === "risk" ? "" : `?order=${encodeURIComponent(order)}`;
}

async function claimNext(button) {
  button.disabled = true;
  const response = await fetch(config.next_api, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({ order: filters.elements.order.value || "risk" }),
  });
  const data = await response.json().catch(() => ({ detail: response.statusText }));
  button.disabled = false;
  if (response.ok) {
    window.location.assign(`${data.url}${orderQuery()}`);
    return;
  }
  tell(response.status === 404 ? "Queue empty: nothing is waiting for your review now." : data.detail, response.status === 404 ? "ok" : "error");
  await load();
}

restoreFilters();
const next = document.getElementById("claim-next");
if (next) next.addEventListener("click", () => claimNext(next));
more.addEventListener("click", loadMore);
filters.addEventListener("change", () => { tell(""); load(); });
filters.addEventListener("submit", (event) => event.preventDefault());
body.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-claim]");
  if (button) claim(button.dataset.claim, button);
});
load();

// The QC review of one annotation: the video and its timeline; the original caption against
// the annotator's version as a redline (overview, every window, the segmentation) with the
// modes tagged; and the actions: claim, approve, amend (a QC pass kept beside the
// annotator's), return with a comment (in a panel beside the units), release; and Next, which
// claims the next item of the queue in the queue's order and opens it ("Approve and next",
// "Send back and next" decide first). Every action goes through the workflow API, which
// refuses a lost race with 409 and says why.
// Shortcuts (outside text fields): C claim, A approve, Shift+A approve and next, E amend,
// R return, N next, K play/pause, Esc cancel, Ctrl+Enter send the open form; U or Ctrl+Z undo
// an approval or an amendment while its notice shows (on the next item's page too).

import { Player } from "./player.js";
import { offerUndo } from "./undo-toast.js";
import { csrfToken, measureForStudy } from "./redline.js";
import {
  element, modeTags, overviewEditor, redline, sameList, span, verdictBadge, windowEditor,
} from "./review-units.js";
import { segmentationEditor } from "./review-segmentation.js";
import { isOpen as guidelinesOpen, toggle as toggleGuidelines } from "./guidelines-panel.js";

const config = JSON.parse(document.getElementById("review-config").textContent);
let data = JSON.parse(document.getElementById("review-data").textContent);
measureForStudy(data.study);
let mode = "view"; // "view" | "amend" | "return"
let editors = null;

const $ = (id) => document.getElementById(id);
const notice = $("notice");
const buttons = {
  claim: $("claim-button"), approve: $("approve-button"), approveNext: $("approve-next-button"),
  amend: $("amend-button"), return: $("return-button"), release: $("release-button"),
};
const nextButton = $("next-button");
// The decision just taken on the item before, carried to the next item's page for its undo.
const CARRIED_UNDO = "redline-review-undo";
const taxonomy = () => data.taxonomy.modes;
const cut = () => data.near_total_cut;

// --------------------------------------------------------------------------- player

const video = $("video");
// The shot changes found at import are drawn on both timelines: a reviewer judging the
// segmentation sees where the cuts are.
const shots = data.clip.shot_changes || [];
const player = new Player({
  video, timeline: $("timeline"), clock: $("clock"), duration: data.clip.duration, fps: data.clip.fps, shots,
});
player.setWindows(data.caption.windows);
player.onTime((t, current) => {
  for (const item of document.querySelectorAll(".review-window")) {
    item.classList.toggle("current", Number(item.dataset.index) === current);
  }
});
let correctedPlayer = null;
// Who hears the windows dragged on the corrected timeline: the QC segmentation editor open now.
let retimeHandler = null;
// What the corrected timeline shows when no QC segmentation amendment is being edited.
let settledCorrection = { windows: [], label: "" };

function drawCorrectedTimeline(windows, options = {}) {
  $("corrected-timeline-box").hidden = !windows.length && !options.editing;
  if (!windows.length && !options.editing) return;
  if (!correctedPlayer) {
    correctedPlayer = new Player({
      video, timeline: $("timeline-corrected"), clock: null, duration: data.clip.duration, fps: data.clip.fps, shots,
    });
    correctedPlayer.onRetime((changes, how) => { if (retimeHandler) retimeHandler(changes, how); });
  }
  correctedPlayer.setWindows(windows, options);
  $("timeline-corrected").classList.toggle("editing", Boolean(options.editing));
}

// The corrected timeline as the segmentation editor asks for it (null: as settled).
const correctedTimeline = {
  show(windows, { editable = () => false, linked = false } = {}) {
    if (!windows) {
      drawCorrectedTimeline(settledCorrection.windows);
      $("corrected-timeline-label").textContent = settledCorrection.label;
      return;
    }
    drawCorrectedTimeline(windows, { editable, linked, editing: true });
    $("corrected-timeline-label").textContent = "Corrected segmentation (QC amendment): drag the boundaries";
  },
  onRetime(listener) { retimeHandler = listener; },
  playhead: () => video.currentTime,
};

// --------------------------------------------------------------------------- messages

function tell(message, kind = "error", link = null) {
  notice.hidden = !message;
  notice.className = `review-notice ${kind}`;
  notice.replaceChildren(document.createTextNode(message || ""));
  if (link) {
    notice.appendChild(document.createTextNode(" "));
    const anchor = element("a", null, link.text);
    anchor.href = link.href;
    notice.appendChild(anchor);
  }
}

function clockTime(iso) {
  return new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

// --------------------------------------------------------------------------- state

function claimExpired() {
  return data.claim_expires_at && new Date(data.claim_expires_at) <= new Date();
}

function mine() {
  return data.state === "in_review" && data.reviewer === config.me && !claimExpired();
}

function claimable() {
  if (!config.can_review) return false;
  if (data.state === "submitted") return true;
  return data.state === "in_review" && (claimExpired() || data.reviewer === config.me);
}

function renderStatus() {
  const state = $("state");
  state.textContent = data.state.replace("_", " ");
  state.className = `badge state-${data.state}`;
  document.body.dataset.state = data.state;
  let claim;
  if (data.state === "in_review") {
    if (claimExpired() && data.reviewer === config.me) claim = "Your claim has expired: claim the item again to go on.";
    else if (claimExpired()) claim = `The claim by ${data.reviewer} has expired.`;
    else if (mine()) claim = `Claimed by you until ${clockTime(data.claim_expires_at)}.`;
    else claim = `Claimed by ${data.reviewer} until ${clockTime(data.claim_expires_at)}.`;
  } else if (data.state === "approved") {
    claim = `Approved by ${data.reviewer}${data.qc_pass && data.qc_pass.overview ? " with QC amendments" : ""}.`;
  } else if (data.state === "returned") {
    claim = `Returned to ${data.annotator}: “${data.return_comment}”`;
  } else if (data.state === "submitted") {
    claim = "Waiting for a reviewer.";
  } else {
    claim = `With the annotator (${data.state.replace("_", " ")}).`;
  }
  $("claim").textContent = claim;
  renderThread();

  const acting = mine();
  buttons.claim.hidden = !claimable() || acting;
  const open = data.state === "submitted" || data.state === "in_review";
  for (const name of ["approve", "approveNext", "amend", "return", "release"]) {
    buttons[name].hidden = !config.can_review || !open;
    buttons[name].disabled = !acting || mode !== "view";
  }
  buttons.claim.disabled = false;
  nextButton.hidden = !config.reviewer;
  nextButton.disabled = mode !== "view";
  $("read-only").hidden = config.can_review;
  $("return-panel").hidden = mode !== "return";
  $("review-layout").dataset.mode = mode;
  $("amend-bar").hidden = mode !== "amend";
  document.body.classList.toggle("amending", mode === "amend");
}

// --------------------------------------------------------------------------- returns

const UNITS = () => [
  { unit: "overview", label: "Overview" },
  ...data.caption.windows.map((w, i) => ({ unit: `window:${w.index}`, label: `Window ${i + 1}` })),
  { unit: "segmentation", label: "Segmentation" },
];
const unitLabel = (unit) => (UNITS().find((u) => u.unit === unit) || { label: unit }).label;

// The latest return's comments and the annotator's replies, side by side.
function renderThread() {
  const box = $("return-thread");
  const units = data.returned_units || [];
  box.hidden = !units.length;
  box.replaceChildren();
  if (!units.length) return;
  box.appendChild(element("h2", null, data.state === "returned" ? "Returned: waiting for the annotator" : "Last return and the annotator's replies"));
  const list = element("ul");
  for (const u of units) {
    const item = element("li", "return-thread-unit");
    item.dataset.unit = u.unit;
    item.appendChild(element("strong", null, unitLabel(u.unit)));
    item.appendChild(element("q", "return-comment", u.comment));
    if (u.reply) {
      item.appendChild(element("span", "muted", ` ${data.annotator} replied: `));
      item.appendChild(element("q", "return-reply", u.reply));
    }
    list.appendChild(item);
  }
  box.appendChild(list);
}

// The unit being commented on, brought into view beside the return panel.
function showUnit(unit) {
  const target = unit === "overview" ? $("overview") : unit === "segmentation" ? $("segmentation")
    : document.querySelector(`.review-window[data-index='${unit.split(":")[1]}']`);
  if (!target) return;
  for (const node of document.querySelectorAll(".review-unit.commented, .review-window.commented")) node.classList.remove("commented");
  target.classList.add("commented");
  target.scrollIntoView({ block: "nearest" });
}

function buildReturnForm() {
  const box = $("return-units");
  for (const old of box.querySelectorAll(".return-unit")) old.remove();
  for (const { unit, label } of UNITS()) {
    const id = unit.replace(":", "-");
    const row = element("div", "return-unit");
    const tick = element("input");
    Object.assign(tick, { type: "checkbox", id: `return-unit-${id}`, value: unit });
    const name = element("label", null, label);
    name.htmlFor = tick.id;
    const note = element("textarea");
    Object.assign(note, { id: `return-note-${id}`, rows: 2, hidden: true });
    note.setAttribute("aria-label", `What to fix in: ${label}`);
    tick.addEventListener("change", () => {
      note.hidden = !tick.checked;
      if (tick.checked) {
        note.focus();
        showUnit(unit);
      }
    });
    row.append(tick, name, note);
    box.appendChild(row);
  }
}

// --------------------------------------------------------------------------- units

function annotatorWindow(index) {
  return (data.annotator_pass.windows || []).find((w) => w.index === index) || { verdict: "" };
}

function qcWindow(index) {
  return ((data.qc_pass && data.qc_pass.windows) || []).find((w) => w.index === index);
}

function differs(a, b, fields) {
  return fields.some((f) => (Array.isArray(a[f]) ? !sameList(a[f], b[f]) : a[f] !== b[f]));
}

function overviewText(version) {
  return version.verdict === "reject" ? version.text : data.caption.overview;
}

const pending = [];

function track(block) {
  pending.push(block.ready);
  return block;
}

function unitHeader(title, version, who) {
  const header = element("header", "unit-head");
  header.appendChild(element("h3", null, title));
  header.appendChild(verdictBadge(version.verdict, who));
  header.appendChild(modeTags(version.modes, taxonomy()));
  return header;
}

function renderOverview() {
  const box = $("overview");
  const original = data.caption.overview;
  const annotator = data.annotator_pass.overview || { verdict: "" };
  box.replaceChildren(unitHeader("Overview", annotator, "annotator"));
  const part = element("div", "unit-version annotator");
  if (annotator.verdict === "reject") {
    part.appendChild(track(redline("Original → annotator", original, annotator.text, cut())));
  } else {
    part.appendChild(element("span", "redline-label", "Original, accepted as written"));
    part.appendChild(element("p", "redline", original));
  }
  box.appendChild(part);
  const qc = data.qc_pass && data.qc_pass.overview;
  if (qc && differs(qc, annotator, ["verdict", "text", "modes"])) {
    const amended = element("div", "unit-version qc");
    amended.appendChild(unitHeader("QC amendment", qc, "QC"));
    amended.appendChild(track(redline("Annotator → QC", overviewText(annotator), overviewText(qc), cut())));
    box.appendChild(amended);
  }
  if (editors) box.appendChild(editors.overview);
}

function windowBlocks(part, window, version, label) {
  if (version.verdict !== "reject") {
    part.appendChild(element("p", "redline scene", window.scene));
    part.appendChild(element("p", "redline shot", window.shot));
    return;
  }
  part.appendChild(track(redline(`Scene, ${label}`, window.scene, version.scene, cut())));
  part.appendChild(track(redline(`Shot, ${label}`, window.shot, version.shot, cut())));
  if (version.start !== window.start || version.end !== window.end) {
    part.appendChild(element("p", "retime", `Retimed: ${span(window)} → ${span(version)}`));
  }
}

// What QC changed in a window, against the annotator's version (the original where they accepted it).
function qcWindowPart(window, annotator, qc) {
  const amended = element("div", "unit-version qc");
  amended.appendChild(unitHeader("QC amendment", qc, "QC"));
  const base = annotator.verdict === "reject" ? annotator : window;
  const target = qc.verdict === "reject" ? qc : window;
  amended.appendChild(track(redline("Scene, annotator → QC", base.scene, target.scene, cut())));
  amended.appendChild(track(redline("Shot, annotator → QC", base.shot, target.shot, cut())));
  if (base.start !== target.start || base.end !== target.end) {
    amended.appendChild(element("p", "retime", `Retimed: ${span(base)} → ${span(target)}`));
  }
  return amended;
}

function renderWindows() {
  const list = $("windows");
  list.replaceChildren();
  for (const window of data.caption.windows) {
    const annotator = annotatorWindow(window.index);
    const item = element("li", "review-window");
    item.dataset.index = window.index;
    const header = unitHeader(`Window ${window.index + 1}`, annotator, "annotator");
    const seek = element("button", "link span", span(window));
    seek.type = "button";
    seek.title = "Play from here";
    seek.addEventListener("click", () => player.seek(window.start));
    header.insertBefore(seek, header.children[1]);
    item.appendChild(header);
    const part = element("div", "unit-version annotator");
    windowBlocks(part, window, annotator, "original → annotator");
    item.appendChild(part);
    const qc = qcWindow(window.index);
    if (qc && differs(qc, annotator, ["verdict", "scene", "shot", "start", "end", "modes"])) {
      item.appendChild(qcWindowPart(window, annotator, qc));
    }
    if (editors) item.appendChild(editors.windows[window.index]);
    list.appendChild(item);
  }
}

function boundaryTable(title, windows) {
  const table = element("table", "table boundaries-table");
  const caption = element("caption", null, title);
  const head = element("tr");
  for (const text of ["#", "Span", "Scene", "Shot"]) head.appendChild(element("th", null, text));
  table.append(caption, head);
  windows.forEach((window, position) => {
    const row = element("tr");
    row.append(element("td", null, String(position + 1)), element("td", "num", span(window)),
      element("td", null, window.scene || ""), element("td", "muted", window.shot || ""));
    table.appendChild(row);
  });
  return table;
}

function renderSegmentation() {
  const box = $("segmentation");
  const annotator = data.annotator_pass.segmentation || { verdict: "", modes: [], windows: [] };
  box.replaceChildren(unitHeader("Segmentation", annotator, "annotator"));
  const part = element("div", "unit-version annotator");
  if (annotator.verdict === "reject") {
    const pair = element("div", "boundary-pair");
    pair.append(boundaryTable("Original windows", data.caption.windows),
      boundaryTable("Annotator's boundaries", annotator.windows));
    part.appendChild(pair);
  } else {
    part.appendChild(element("p", "muted", `The ${data.caption.windows.length} windows' boundaries are accepted as they are.`));
  }
  box.appendChild(part);
  const qc = data.qc_pass && data.qc_pass.segmentation;
  const changed = qc && (differs(qc, annotator, ["verdict", "modes"]) || JSON.stringify(qc.windows) !== JSON.stringify(annotator.windows));
  if (changed) {
    const amended = element("div", "unit-version qc");
    amended.appendChild(unitHeader("QC amendment", qc, "QC"));
    if (qc.verdict === "reject") amended.appendChild(boundaryTable("QC boundaries", qc.windows));
    box.appendChild(amended);
  }
  const final = qc && qc.verdict ? qc : annotator;
  settledCorrection = {
    windows: final.verdict === "reject" ? final.windows : [],
    label: qc && qc.verdict ? "Corrected segmentation (QC)" : "Corrected segmentation (annotator)",
  };
  if (editors) {
    box.appendChild(editors.segmentation);
    editors.segmentation.redraw();
  } else {
    retimeHandler = null;
    correctedTimeline.show(null);
  }
}

function renderWork() {
  const facts = $("work-facts");
  facts.replaceChildren();
  const add = (term, value) => facts.append(element("dt", null, term), element("dd", null, value));
  const minutes = Math.floor(data.active_seconds / 60);
  add("Active time", `${minutes} min ${Math.round(data.active_seconds - 60 * minutes)} s`);
  const watched = data.telemetry && data.telemetry.watched_share;
  add("Clip watched", watched === undefined ? "—" : `${Math.round(100 * Number(watched))}%`);
  if (data.telemetry && data.telemetry.seeks !== undefined) add("Seeks", String(data.telemetry.seeks));
  add("Clip", `${data.clip.duration.toFixed(2)} s at ${data.clip.fps.toFixed(2)} fps`);
}

async function renderHistory() {
  const list = $("history-list");
  const response = await fetch(`${config.api}audit/`, { credentials: "same-origin" });
  if (!response.ok) return;
  const events = await response.json();
  list.replaceChildren();
  for (const event of events) {
    if (event.action === "save") continue;
    const item = element("li");
    item.appendChild(element("time", "muted", new Date(event.at).toLocaleString([], { dateStyle: "short", timeStyle: "short" })));
    const undone = event.action === "undo" && event.after && event.after.undone;
    const what = undone ? `undid ${undone.replace("_", " ")}` : event.action.replace("_", " ");
    item.appendChild(document.createTextNode(` ${event.actor || "system"}: ${what}`));
    if (event.after && event.after.comment) item.appendChild(element("q", "return-comment", event.after.comment));
    for (const reply of (event.after && event.after.replies) || []) {
      if (reply.reply) item.appendChild(element("span", "muted", ` ${unitLabel(reply.unit)}: “${reply.reply}”`));
    }
    const size = event.after && event.after.edit_size;
    if (size) {
      // The server measures a window's scene and shot as one text; the redlines above measure each apart.
      const parts = [`overview ${size.overview.words_changed} words (character similarity ${size.overview.char_similarity.toFixed(2)})`];
      for (const w of size.windows) {
        parts.push(`window ${w.index + 1}, scene and shot together, ${w.words_changed} words (character similarity ${w.char_similarity.toFixed(2)})`);
      }
      item.appendChild(element("span", "qc-edit-size muted", ` — QC edit size, annotator → QC: ${parts.join("; ")}`));
    }
    list.appendChild(item);
  }
  $("history").dataset.count = String(list.children.length);
}

function render() {
  pending.length = 0;
  document.body.dataset.ready = "false";
  renderStatus();
  renderOverview();
  renderWindows();
  renderSegmentation();
  renderWork();
  renderHistory();
  Promise.all(pending).then(() => { document.body.dataset.ready = "true"; });
}

// --------------------------------------------------------------------------- actions

async function act(action, body) {
  const response = await fetch(`${config.api}${action}/`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  if (response.ok) {
    data = { ...answer, caption: { ...answer.caption, model: config.model_alias } };
    return { ok: true };
  }
  if (response.status === 409 && answer.current) data = { ...data, ...answer.current };
  return { ok: false, status: response.status, detail: answer.detail || `Refused (${response.status}).` };
}

// A window as it stands in the QC version being edited ({number, start, end}; null past the ends).
function editedWindow(index) {
  const caption = data.caption.windows.find((w) => w.index === index);
  const editor = editors && editors.windows[index];
  if (!caption || !editor) return null;
  const { start, end } = editor.times();
  return {
    number: index + 1,
    start: Number.isFinite(start) ? start : caption.start,
    end: Number.isFinite(end) ? end : caption.end,
  };
}

// A window's time typed in the QC editor is checked against its neighbours as they stand:
// a change to one (its times or its verdict) re-checks the windows either side.
document.addEventListener("input", (event) => {
  if (mode !== "amend" || !editors || !event.target.closest(".review-window .amend-editor")) return;
  for (const editor of Object.values(editors.windows)) editor.timeProblem();
});

function setMode(next) {
  mode = next;
  if (mode === "amend") {
    const pass = data.annotator_pass;
    editors = {
      overview: overviewEditor({ original: data.caption.overview, mine: pass.overview, taxonomy: taxonomy(), cut: cut() }),
      windows: Object.fromEntries(data.caption.windows.map((window) => [
        window.index, windowEditor({
          window, mine: annotatorWindow(window.index), taxonomy: taxonomy(), cut: cut(), duration: data.clip.duration,
          neighbours: () => ({ previous: editedWindow(window.index - 1), next: editedWindow(window.index + 1) }),
        }),
      ])),
      segmentation: segmentationEditor({
        original: data.caption.windows, mine: pass.segmentation, taxonomy: taxonomy(), duration: data.clip.duration,
        timeline: correctedTimeline,
      }),
    };
  } else {
    editors = null;
  }
  render();
  if (mode === "return") {
    buildReturnForm();
    $("return-units").querySelector("input").focus();
  }
  if (mode === "amend") {
    const first = editors.overview.querySelector("textarea:not(:disabled)") || editors.overview.querySelector("input:checked");
    if (first) first.focus();
  }
}

const done = { approve: "Approved.", amend: "Amended and approved: the QC pass is stored beside the annotator's.",
  return: "Returned to the annotator, with your comment.", release: "Released: the item is back in the queue." };

async function run(action, body, { next = false } = {}) {
  if (action !== "claim" && !mine()) {
    tell(claimable() ? "Claim this item first." : "This item is not claimed by you.");
    return;
  }
  for (const button of Object.values(buttons)) button.disabled = true;
  const result = await act(action, body);
  if (result.ok) {
    if (action === "claim") {
      tell("");
    } else {
      mode = "view";
      editors = null;
      tell(done[action], "ok", { text: "Back to the queue", href: config.queue_url });
    }
    render();
    offerApprovalUndo();
    if (next) await goNext({ decided: true });
    return;
  }
  if (result.status === 409) {
    // Keep unsent amendments or a comment when the item can simply be claimed again.
    const again = claimable();
    if (!again) {
      mode = "view";
      editors = null;
    }
    tell(`Not done: ${result.detail}${again ? " Claim it again to go on." : ""}`);
    render();
    return;
  }
  tell(result.detail);
  renderStatus();
}

function amend() {
  // Impossible times are said at their field and sent nowhere.
  for (const editor of [...Object.values(editors.windows), editors.segmentation]) {
    const problem = editor.timeProblem();
    if (problem) {
      tell(`Not amended: ${problem.message}`);
      problem.input.focus();
      return;
    }
  }
  const changes = {};
  const overview = editors.overview.change();
  if (overview) changes.overview = overview;
  const windows = Object.values(editors.windows).map((editor) => editor.change()).filter(Boolean);
  if (windows.length) changes.windows = windows;
  const segmentation = editors.segmentation.change();
  if (segmentation) changes.segmentation = segmentation;
  if (!Object.keys(changes).length) {
    tell("Nothing is amended yet: change the QC version, or cancel and approve.");
    return;
  }
  run("amend", { changes });
}

function sendReturn({ next = false } = {}) {
  const units = [];
  for (const tick of $("return-units").querySelectorAll("input:checked")) {
    const note = $(`return-note-${tick.value.replace(":", "-")}`);
    if (!note.value.trim()) {
      tell(`${unitLabel(tick.value)}: say what to fix; every returned unit needs a comment.`);
      note.focus();
      return;
    }
    units.push({ unit: tick.value, comment: note.value.trim() });
  }
  if (!units.length) {
    tell("Tick the units the annotator should fix (the overview, a window or the segmentation).");
    $("return-units").querySelector("input").focus();
    return;
  }
  run("return", { units, comment: $("return-comment").value.trim() }, { next });
}

// --------------------------------------------------------------------------- next

function orderQuery() {
  return config.order === "risk" ? "" : `?order=${encodeURIComponent(config.order)}`;
}

// Claim the next item of the queue and open it. An undecided item this reviewer holds here goes
// back to the queue once the next one is theirs; after a decision its undo travels along.
async function goNext({ decided = false } = {}) {
  nextButton.disabled = true;
  const held = !decided && mine() ? data.id : null;
  let response;
  try {
    response = await fetch(config.next_api, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
      body: JSON.stringify({ order: config.order }),
    });
  } catch {
    tell("No connection: the next item could not be claimed. Try again.");
    nextButton.disabled = false;
    return;
  }
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  if (response.status === 404) {
    $("queue-empty").hidden = false;
    document.body.dataset.queueEmpty = "true";
    nextButton.disabled = false;
    return;
  }
  if (!response.ok) {
    tell(`No next item: ${answer.detail || response.status}`);
    nextButton.disabled = false;
    return;
  }
  if (held) await act("release");
  if (decided && data.undo && data.undo.seconds_left > 0) {
    sessionStorage.setItem(CARRIED_UNDO, JSON.stringify({
      id: data.id, action: data.undo.action, until: data.undo.until, clip: config.clip,
    }));
  }
  window.location.assign(`${answer.url}${orderQuery()}`);
}

// The undo of the decision taken on the item before "and next": undone, that item comes back
// (its claim is the reviewer's again) and the one claimed here returns to the queue.
function offerCarriedUndo() {
  const raw = sessionStorage.getItem(CARRIED_UNDO);
  if (!raw) return;
  sessionStorage.removeItem(CARRIED_UNDO);
  let carried;
  try { carried = JSON.parse(raw); } catch { return; }
  if (!carried || carried.id === data.id) return;
  offerUndo({
    annotationId: carried.id,
    seconds: (new Date(carried.until) - Date.now()) / 1000,
    message: `${carried.action === "amend" ? "Amended and approved" : "Approved"}: ${carried.clip}.`,
    onUndone: async () => {
      if (mine() && mode === "view") await act("release");
      window.location.assign(`/review/${carried.id}/${orderQuery()}`);
    },
    onRefused: (message) => tell(message),
  });
}

// An approval, or an amendment with its approval, can be undone for a few seconds by the
// reviewer who gave it (undo-toast.js); a reload within the window offers it again for the
// seconds left. Undoing an amendment removes the QC pass.
function offerApprovalUndo() {
  if (!data.undo || !["approve", "amend"].includes(data.undo.action)) return;
  const amended = data.undo.action === "amend";
  offerUndo({
    annotationId: data.id,
    seconds: data.undo.seconds_left,
    message: amended ? "Amended and approved." : "Approved.",
    onUndone: (answer) => {
      data = { ...answer, caption: { ...answer.caption, model: config.model_alias } };
      tell(amended ? "Undone: not amended, not approved; the QC pass is removed and the item is still claimed by you."
        : "Undone: not approved; the item is still claimed by you.", "ok");
      $("queue-empty").hidden = true;
      render();
    },
    onRefused: (message) => tell(message),
  });
}

buttons.claim.addEventListener("click", () => run("claim"));
buttons.approve.addEventListener("click", () => run("approve"));
buttons.approveNext.addEventListener("click", () => run("approve", null, { next: true }));
nextButton.addEventListener("click", () => { tell(""); goNext(); });
$("return-next").addEventListener("click", () => sendReturn({ next: true }));
buttons.release.addEventListener("click", () => run("release"));
buttons.amend.addEventListener("click", () => { tell(""); setMode("amend"); });
buttons.return.addEventListener("click", () => { tell(""); setMode("return"); });
$("amend-save").addEventListener("click", amend);
$("return-form").addEventListener("submit", (event) => { event.preventDefault(); sendReturn(); });
for (const cancel of document.querySelectorAll("[data-cancel]")) {
  cancel.addEventListener("click", () => { tell(""); setMode("view"); });
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && guidelinesOpen()) { toggleGuidelines(false); return; }
  if (event.key === "Escape" && mode !== "view") { tell(""); setMode("view"); return; }
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    if (mode === "amend") amend();
    if (mode === "return") sendReturn();
    return;
  }
  const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
  if (typing || event.ctrlKey || event.metaKey || event.altKey || mode !== "view") return;
  const key = event.key.toLowerCase();
  if (key === "k") { player.toggle(); event.preventDefault(); return; }
  if (key === "g") { if (!event.repeat) toggleGuidelines(); event.preventDefault(); return; }
  if (key === "n" && !event.shiftKey) {
    if (!nextButton.hidden && !nextButton.disabled) { event.preventDefault(); nextButton.click(); }
    return;
  }
  const action = event.shiftKey ? { a: "approveNext" }[key] : { c: "claim", a: "approve", e: "amend", r: "return" }[key];
  if (!action || buttons[action].hidden || buttons[action].disabled) return;
  event.preventDefault();
  buttons[action].click();
});

// The claim runs out while the page is open: show it when it does.
setInterval(() => { if (mode === "view") renderStatus(); }, 15000);
render();
offerCarriedUndo();
offerApprovalUndo();

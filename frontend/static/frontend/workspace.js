// The annotator workspace: overview pass, window pass, segmentation, submit to QC.
//
// The page gets its first payload from json_script and then talks to the same
// REST API as any other client: PATCH .../draft/ (autosave with base_version),
// POST .../lock-overview/, POST .../submit/. The redline and edit size come from edits.js.
// Caption text is untrusted: it only ever reaches the page through textContent.

import { Player } from "./player.js";
import { resizableSplit } from "./workspace-split.js";
import { wordDiff } from "./edits.js";
import { liveMeasurer } from "./live-edits.js";
import { mergeUnit } from "./merge.js";
import { csrfToken, renderRedline } from "./redline.js";
import { Activity } from "./workspace-activity.js";
import { duration, fill, h, kbd, same, seconds, span } from "./workspace-dom.js";
import { actionFor, isTyping, renderHelp } from "./workspace-keys.js";
import { Sync } from "./workspace-sync.js";
import { unitModel } from "./workspace-units.js";
import { offerUndo } from "./undo-toast.js";

const data = JSON.parse(document.getElementById("workspace-data").textContent);
const { clip, caption, taxonomy } = data;
const originals = caption.windows;
const N = originals.length;
const MODES = taxonomy.modes;
const CUT = data.near_total_cut;
const LIMIT = clip.duration + 0.5;
const RATES = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2];
// A closed or archived study is read-only: no state is editable then (the server refuses too).
const EDITABLE = data.read_only ? "" : "in_progress";

const $ = (id) => document.getElementById(id);
const root = $("workspace");
const panel = $("panel");
const video = $("video");
const timeline = $("timeline");
const notice = $("notice");
const saveStatus = $("save-status");
const helpDialog = $("help");
const conflictDialog = $("conflict");

const {
  num, sortModes, modeName, normWindow, fromPass, isWindowKey, positionOf, unitOf, setUnit,
  timeFieldProblems, timesProblem, timelineFieldProblems, unitTimeProblem, unitValid, overviewProblems,
  unitProblems: problemsOf, firstOpenUnit: firstOpen, windowJudged, segmentationJudged,
} = unitModel(data);
const unitProblems = (unit) => problemsOf(draft, unit);
const firstOpenUnit = () => firstOpen(draft);

let server = pickServer(data);
let draft = fromPass(server.annotator_pass);
const stash = new Map(); // a unit's rejected version, kept while it is accepted, in case of a change of mind
const view = { unit: 0, segRow: 0, loop: false, loopSpan: null };
let busy = false;

function pickServer(snapshot) {
  const keys = ["version", "state", "overview_locked", "return_comment", "returned_units", "annotator_pass", "ui_state", "telemetry", "active_seconds"];
  return Object.fromEntries(keys.map((key) => [key, snapshot[key]]));
}

const pass = () => (server.state !== EDITABLE ? "done" : server.overview_locked ? "windows" : "overview");
const currentKey = () => {
  if (pass() === "overview") return "overview";
  if (pass() !== "windows") return null;
  return view.unit >= N ? "segmentation" : `w:${view.unit}`;
};

// ------------------------------------------------------------------ returned units

// After a return that names units, only those reopen; the others stay as submitted.
// The server names a window "window:<index>", the page "w:<position>".
const pageUnit = (unit) => {
  if (!unit.startsWith("window:")) return unit;
  const position = originals.findIndex((o) => o.index === Number(unit.slice(7)));
  return `w:${position}`;
};
const returnedUnits = () => (server.state === EDITABLE ? server.returned_units || [] : []);
const closedUnit = (key) => {
  const units = returnedUnits();
  return Boolean(key) && units.length > 0 && !units.some((u) => pageUnit(u.unit) === key);
};
const replies = {}; // page unit key -> the annotator's reply to the reviewer's comment
let bannerFor = null;

function refuseClosed(key) {
  if (!closedUnit(key)) return false;
  say(`QC did not return ${unitLabel(key).toLowerCase()}: it stays as you submitted it.`);
  return true;
}

function renderReturnBanner() {
  const banner = $("return-banner");
  const units = returnedUnits();
  const comment = server.return_comment;
  banner.hidden = pass() === "done" || (!units.length && !comment);
  const signature = JSON.stringify([units, comment, server.state]);
  if (banner.hidden || signature === bannerFor) return;
  bannerFor = signature;
  if (!units.length) {
    fill(banner, h("strong", { text: "Returned by QC." }), " ", h("span", { id: "return-comment", text: comment }),
      " ", h("span", { class: "muted", text: "Revise and submit again." }));
    return;
  }
  fill(banner,
    h("strong", { text: "Returned by QC." }), " ",
    h("span", { class: "muted", text: "Only these units are open again; the rest stay as you submitted them. If you keep a unit unchanged, reply to say why." }),
    h("ul", { class: "ws-returned-units", id: "returned-units" }, units.map((u) => {
      const key = pageUnit(u.unit);
      const id = `reply-${u.unit.replace(":", "-")}`;
      const area = h("textarea", { id, rows: 2, value: replies[key] ?? u.reply ?? "", placeholder: "I disagree because …" });
      area.addEventListener("input", () => { replies[key] = area.value; });
      const go = h("button", { type: "button", class: "link", onclick: () => openUnit(key) }, unitLabel(key));
      return h("li", { class: "ws-returned-unit", dataset: { unit: u.unit } },
        go, " ", h("q", { class: "ws-return-note", text: u.comment }),
        h("label", { htmlFor: id, class: "ws-label", text: `Your reply on ${unitLabel(key).toLowerCase()} (needed only if you keep it unchanged)` }),
        area);
    })));
}

function openUnit(key) {
  if (key === "overview" || pass() !== "windows") return;
  goToUnit(key === "segmentation" ? N : positionOf(key), { seek: true });
}

function closedNote() {
  return h("p", { class: "ws-closed muted", text: "Not returned by QC: kept as you submitted it." });
}

// ------------------------------------------------------------------ player, activity, autosave

const player = new Player({
  video, timeline, clock: $("clock"), duration: clip.duration, fps: clip.fps, shots: clip.shot_changes || [],
});

const activity = new Activity({
  video, duration: clip.duration, telemetry: server.telemetry, activeSeconds: server.active_seconds,
  onTick: (a) => {
    $("active-time").textContent = `Active ${duration(a.total)}`;
    if (a.extras().pending && server.state === EDITABLE) sync.touch();
  },
});

let sentUi = JSON.stringify(server.ui_state || {});

function uiState() {
  const active = document.activeElement;
  const focus = isTyping(active) && active.id ? { id: active.id, at: active.selectionStart ?? null } : null;
  return {
    unit: view.unit, seg_row: view.segRow, loop: view.loop,
    time: Math.round(video.currentTime * 100) / 100, rate: video.playbackRate, focus,
  };
}

const sync = new Sync({
  id: data.id,
  version: server.version,
  unit: (key) => {
    const value = unitOf(draft, key);
    return { value, valid: unitValid(key, value) };
  },
  extras: () => {
    const extras = activity.extras();
    const ui = uiState();
    if (JSON.stringify(ui) !== sentUi) extras.changes.ui_state = ui;
    return extras;
  },
  extrasSent: (changes) => {
    activity.sent(changes);
    if (changes.ui_state) sentUi = JSON.stringify(changes.ui_state);
  },
  onSaved: (answer) => {
    server = pickServer(answer);
  },
  onConflict: (current, detail) => conflict(current, detail, fromPass(server.annotator_pass)),
  onRejected: (detail) => say(`Not saved: ${detail}`, "error"),
  onStatus: showStatus,
});

function showStatus(state, { count, detail }) {
  if (server.state !== EDITABLE) state = "readonly";
  const text = {
    saved: "All changes saved",
    dirty: "Unsaved changes…",
    saving: "Saving…",
    offline: `Offline: ${count || "your"} change${count === 1 ? "" : "s"} kept on this device, retrying`,
    error: `Not saved: ${detail}`,
    invalid: "Not saved until the marked problem is fixed",
    conflict: "Conflict: choose a version",
    readonly: "Read only",
  }[state];
  saveStatus.dataset.status = state;
  saveStatus.textContent = text;
  markUnsaved();
}

// A chip carries a dot while its unit has changes the server has not acknowledged.
function markUnsaved() {
  for (const chip of panel.querySelectorAll(".ws-chip")) {
    const unit = Number(chip.dataset.unit);
    chip.classList.toggle("ws-unsaved", sync.has(unit >= N ? "segmentation" : `w:${unit}`));
  }
}

function edited(key) {
  sync.setUi(uiState());
  sync.mark(key);
}

function viewChanged() {
  sync.setUi(uiState());
  if (server.state === EDITABLE) sync.touch();
}

// ------------------------------------------------------------------ messages

let noticeTimer = null;

// A fault in this page's code means nothing on screen can be trusted to be saved:
// say so, instead of leaving "All changes saved" up while the work is not.
function fault(message) {
  sync.broken(`this page hit a fault (${message})`);
  say("Something went wrong in this page. Your changes are kept on this device: reload the page to go on.", "error", { sticky: true });
}
// Faults are errors of this code (a ReferenceError, say), not the browser's DOMExceptions such
// as a play() cut short by a pause, which say nothing about what is saved.
const isFault = (error) => error instanceof Error && !(error instanceof DOMException);
window.addEventListener("error", (event) => { if (isFault(event.error)) fault(event.message); });
window.addEventListener("unhandledrejection", (event) => { if (isFault(event.reason)) fault(event.reason.message); });

function say(message, kind = "info", { sticky = false } = {}) {
  clearTimeout(noticeTimer);
  notice.className = `ws-banner ws-${kind}`;
  notice.textContent = message;
  notice.hidden = !message;
  if (message && !sticky) noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
}

// ------------------------------------------------------------------ edit size and redline

let sizeTargets = [];

// Computed here, on every keystroke (edits.js gives the server's numbers, offline too); what is
// stored is scored again by the server.
function scheduleSizes() {
  updateSizes();
}

function updateSizes() {
  for (const target of sizeTargets) {
    const text = target.get();
    if (text === target.shown) continue;
    target.shown = text;
    if (text === target.original) {
      fill(target.redline, h("span", { class: "muted", text: "No changes yet." }));
      fill(target.box);
      continue;
    }
    measureSize(target, text);
  }
}

// Draws a size from live-edits.js: the page's own (note empty) or the server's (note says so).
function showSize(target, size, note) {
  const noteNode = note ? h("span", { class: "muted ws-size-source" }, note) : null;
  if (!size) { fill(target.box, noteNode); return; }
  renderRedline(target.redline, size.diff);
  const words = size.words_changed;
  fill(target.box,
    h("span", { class: "ws-num", dataset: { words } }, `${words} word${words === 1 ? "" : "s"} changed`),
    " · ",
    h("span", { class: "ws-num", dataset: { similarity: size.char_similarity } },
      `character similarity ${size.char_similarity.toFixed(2)}`),
    size.near_total
      ? h("strong", { class: "ws-near-total" },
        `Near-total rewrite: similarity is below ${CUT}. Is this still a correction of the original?`)
      : null,
    noteNode ? " · " : null, noteNode,
  );
}

const measureSize = liveMeasurer({ study: data.study, language: data.caption_language, cut: CUT, show: showSize });

// ------------------------------------------------------------------ building blocks

function textField({ id, label, original, value, rows, onInput }) {
  const area = h("textarea", { id, rows, value, spellcheck: "true" });
  area.addEventListener("input", () => {
    scheduleSizes(); // first: what the person looks at while typing; it reads the field itself
    onInput(area.value);
    refreshChecks();
  });
  const redline = h("p", { class: "ws-redline", id: `${id}-redline` });
  const box = h("p", { class: "ws-size", id: `${id}-size`, "aria-live": "polite" });
  sizeTargets.push({ original, get: () => area.value, redline, box });
  return h("div", { class: "ws-field" },
    h("label", { htmlFor: id, text: label }),
    area,
    h("div", { class: "ws-diff", "aria-label": `${label}: changes against the original` },
      h("span", { class: "ws-label", text: "Redline" }), redline, box));
}

// A time in seconds, with its problem (if any) written right under it by refreshTimeFields.
function numberField({ id, label, value, onInput }) {
  const input = h("input", {
    id, type: "number", step: "0.01", min: "0", max: String(LIMIT), value: Number.isFinite(value) ? String(value) : "",
    class: "ws-time-input", "aria-describedby": `${id}-problem`,
  });
  input.addEventListener("input", () => {
    onInput(num(input.value));
    refreshTimeline();
    refreshChecks();
  });
  return h("label", { class: "ws-time", htmlFor: id }, h("span", { text: label }), input,
    h("span", { class: "ws-field-problem", id: `${id}-problem`, role: "alert", hidden: true }));
}

function showFieldProblem(id, problem) {
  const input = $(id);
  const message = $(`${id}-problem`);
  if (!input || !message) return;
  input.toggleAttribute("aria-invalid", Boolean(problem));
  message.textContent = problem;
  message.hidden = !problem;
}

// Every time field on screen says what is wrong with it, at the field.
function refreshTimeFields() {
  const key = currentKey();
  if (key === "segmentation" && draft.segmentation.verdict === "reject") {
    timelineFieldProblems(draft.segmentation.windows).forEach((problems, r) => {
      showFieldProblem(`seg-start-${r}`, problems.start);
      showFieldProblem(`seg-end-${r}`, problems.end);
    });
  } else if (key && isWindowKey(key)) {
    const w = unitOf(draft, key);
    const problems = timeFieldProblems(w.start, w.end);
    showFieldProblem("window-start", problems.start);
    showFieldProblem("window-end", problems.end);
  }
}

// Accepting a unit or leaving it waits until its times make sense; says why and
// puts the person on the field to fix. True when the way is clear.
function timesAllowLeaving(what) {
  const key = currentKey();
  const problem = key ? unitTimeProblem(draft, key) : "";
  if (!problem) return true;
  say(`${unitLabel(key)}: ${problem} Fix it before you ${what}.`, "error");
  refreshTimeFields();
  panel.querySelector(".ws-time-input[aria-invalid]")?.focus();
  return false;
}

function verdictButtons(key, verdict) {
  const rejectLabel = key === "segmentation" ? "Reject and correct the boundaries" : "Reject and edit";
  return h("div", { class: "ws-verdict", role: "group", "aria-label": "Verdict" },
    h("button", {
      type: "button", id: "accept", class: `ws-accept${verdict === "accept" ? " chosen" : ""}`,
      "aria-pressed": String(verdict === "accept"), onclick: accept,
    }, verdict === "accept" ? "Accepted " : "Accept ", kbd("A")),
    h("button", {
      type: "button", id: "reject", class: `ws-reject${verdict === "reject" ? " chosen" : ""}`,
      "aria-pressed": String(verdict === "reject"), onclick: reject,
    }, verdict === "reject" ? "Rejected " : `${rejectLabel} `, kbd("R")));
}

// A unit's title with its verdict beside it: one line, so the decision stays in view.
function unitHead(title, note, verdict) {
  return h("div", { class: "ws-unit-head" }, h("h2", null, title, " ", note ? h("span", { class: "muted ws-num", text: note }) : null), verdict);
}

function modePicker(key) {
  const unit = unitOf(draft, key);
  const box = h("fieldset", { class: "ws-modes", id: "modes" },
    h("legend", null, "Failure modes ",
      h("span", { class: "muted", text: "at least one · keys 1–6 · definitions on hover, focus or " }), kbd("?")));
  MODES.forEach((mode, i) => {
    const allowed = key === "segmentation" || mode.level !== "caption";
    const input = h("input", {
      type: "checkbox", id: `mode-${mode.key}`, value: mode.key, checked: unit.modes.includes(mode.key), disabled: !allowed,
    });
    input.addEventListener("change", () => setMode(key, mode.key, input.checked));
    // Names only, so that all modes fit beside the editors; the definition shows on hover or
    // focus (over the page, not pushing it) and in the ? help.
    const note = allowed ? "" : " (judged once per caption, in the segmentation step)";
    input.setAttribute("aria-describedby", `mode-${mode.key}-definition`);
    box.append(h("div", { class: `ws-mode${allowed ? "" : " ws-disabled"}`, title: `${mode.definition} ${mode.decision_test}${note}` },
      input,
      h("label", { htmlFor: input.id }, h("kbd", { text: String(i + 1) }), " ", mode.name),
      h("p", { class: "ws-definition", id: `mode-${mode.key}-definition`, role: "tooltip" },
        mode.definition, " ", h("em", { text: mode.decision_test }), note)));
  });
  box.append(h("p", { class: "ws-precedence", id: "precedence", role: "alert", hidden: true }));
  return box;
}

function refreshModes() {
  const key = currentKey();
  if (!key) return;
  const unit = unitOf(draft, key);
  for (const input of panel.querySelectorAll(".ws-modes input[type=checkbox]")) {
    input.checked = unit.modes.includes(input.value);
  }
  const warning = $("precedence");
  if (!warning) return;
  const rules = (taxonomy.precedence_rules || []).filter((rule) => unit.modes.includes(rule.prefer) && unit.modes.includes(rule.over));
  warning.hidden = !rules.length;
  warning.textContent = rules.map((rule) => `Tagged both ${modeName(rule.prefer)} and ${modeName(rule.over)}: ${rule.rule}`).join(" ");
}

// ------------------------------------------------------------------ what is still missing

function refreshChecks() {
  refreshTimeFields();
  const list = $("checks");
  if (!list) return;
  let problems;
  let summary = "";
  if (pass() === "overview") {
    problems = overviewProblems(draft.overview);
  } else {
    problems = unitProblems(view.unit);
    const judged = draft.windows.filter((w, position) => windowJudged(draft, position)).length;
    const segmentation = segmentationJudged(draft) ? `segmentation ${draft.segmentation.verdict}ed` : "segmentation not judged yet";
    summary = `${judged} of ${N} windows judged · ${segmentation}`;
  }
  fill(list,
    ...problems.map((problem) => h("li", { class: "ws-todo", text: problem })),
    problems.length ? null : h("li", { class: "ws-ok", text: pass() === "overview" ? "Ready: submit the overview verdict." : "This one is complete." }),
  );
  const summaryNode = $("progress-summary");
  if (summaryNode) summaryNode.textContent = summary;
  for (const chip of panel.querySelectorAll(".ws-chip")) {
    const unit = Number(chip.dataset.unit);
    const verdict = unit >= N ? draft.segmentation.verdict : draft.windows[unit].verdict;
    chip.dataset.verdict = verdict || "none";
    chip.classList.toggle("ws-incomplete", Boolean(verdict) && unitProblems(unit).length > 0);
  }
  markUnsaved();
}

// ------------------------------------------------------------------ rendering

function refreshTimeline() {
  let windows;
  let editable = () => false;
  const segmenting = pass() === "windows" && view.unit >= N && draft.segmentation.verdict === "reject";
  if (segmenting) {
    windows = draft.segmentation.windows;
    timeline.classList.add("ws-corrected");
    editable = () => server.state === EDITABLE;
  } else {
    windows = pass() === "overview" ? originals : draft.windows;
    timeline.classList.remove("ws-corrected");
    if (pass() === "windows" && view.unit < N && draft.windows[view.unit].verdict === "reject") {
      editable = (index) => index === view.unit && server.state === EDITABLE;
    }
  }
  const drawable = windows.filter((w) => !timesProblem(w.start, w.end));
  if (drawable.length === windows.length) player.setWindows(windows, { editable, linked: segmenting });
  else player.setWindows(originals);
  markSelected();
  refreshTimelineTools();
}

// The timeline's split and merge buttons work on the corrected windows of the segmentation.
function refreshTimelineTools() {
  const on = segmentationEditable() && server.state === EDITABLE;
  for (const id of ["tl-split", "tl-merge"]) $(id).disabled = !on;
  $("tl-merge").disabled = !on || view.segRow >= draft.segmentation.windows.length - 1;
}

function zoom(direction) {
  if (direction) player.zoomBy(direction); else player.zoomFit();
  $("tl-zoom").textContent = `${player.zoom}×`;
}

{
  const shots = clip.shot_changes || [];
  $("shot-legend").textContent = shots.length
    ? `${shots.length} shot change${shots.length === 1 ? "" : "s"}; edges snap to them (Shift: no snapping)`
    : "No shot changes detected";
}

resizableSplit({ layout: document.querySelector(".ws-layout"), splitter: $("splitter"), onResize: () => player.scheduleRuler() });

// Boundaries dragged on the timeline: the numbers in the fields follow while dragging.
player.onRetime((changes, { done }) => {
  const key = currentKey();
  if (key === "segmentation" && segmentationEditable()) {
    for (const { index, start, end } of changes) {
      const row = draft.segmentation.windows[index];
      Object.assign(row, { start, end });
      for (const field of ["start", "end"]) {
        const input = $(`seg-${field}-${index}`);
        if (input) input.value = String(row[field]);
      }
    }
    if (changes.length) selectRow(changes[0].index);
  } else if (key && isWindowKey(key)) {
    const w = unitOf(draft, key);
    for (const { start, end } of changes) Object.assign(w, { start, end });
    for (const field of ["start", "end"]) {
      const input = $(`window-${field}`);
      if (input) input.value = String(w[field]);
    }
  } else {
    return;
  }
  if (done) {
    edited(key);
    refreshTimeline();
  }
  refreshChecks();
});

function markSelected() {
  const corrected = timeline.classList.contains("ws-corrected");
  const selected = pass() !== "windows" ? -1 : corrected ? view.segRow : view.unit;
  for (const segment of timeline.querySelectorAll(".segment")) {
    segment.classList.toggle("ws-selected", Number(segment.dataset.index) === selected);
  }
  for (const row of panel.querySelectorAll(".ws-row")) {
    row.classList.toggle("ws-selected", Number(row.dataset.row) === view.segRow);
  }
}

function render() {
  sizeTargets = [];
  const current = pass();
  root.dataset.state = current;
  const step = current === "overview" ? "overview" : current === "done" ? "submitted" : view.unit >= N ? "segmentation" : "windows";
  for (const item of document.querySelectorAll("#steps li")) {
    const steps = ["overview", "windows", "segmentation", "submitted"];
    item.classList.toggle("ws-current", item.dataset.step === step);
    item.classList.toggle("ws-past", steps.indexOf(item.dataset.step) < steps.indexOf(step));
    item.toggleAttribute("aria-current", item.dataset.step === step);
  }
  renderReturnBanner();
  if (current === "overview") fill(panel, ...renderOverview());
  else if (current === "windows") fill(panel, ...renderWindowPass());
  else fill(panel, ...renderDone());
  refreshTimeline();
  refreshModes();
  refreshChecks();
  scheduleSizes();
}

function renderOverview() {
  const o = draft.overview;
  return [
    unitHead("Overview", "step 1 of 3", verdictButtons("overview", o.verdict)),
    o.verdict ? null : h("p", { class: "muted ws-intro", text: "Watch the clip and read the overview against it. Accept it as written, or reject it and correct the text in place. The windows open after you submit this verdict." }),
    h("div", { class: "ws-original" },
      h("span", { class: "ws-label", text: "Original overview" }),
      h("p", { id: "original-overview", text: caption.overview || "(empty)" })),
    o.verdict === "reject"
      ? h("div", { class: "ws-editor" },
        textField({
          id: "overview-text", label: "Corrected overview", original: caption.overview, value: o.text, rows: 4,
          onInput: (value) => { draft.overview.text = value; edited("overview"); },
        }),
        modePicker("overview"))
      : null,
    h("ul", { class: "ws-checks", id: "checks", "aria-live": "polite" }),
    h("div", { class: "ws-actions" },
      h("button", { type: "button", class: "primary", id: "lock-overview", onclick: lockOverview },
        "Submit overview verdict ", kbd("Ctrl", "Enter")),
      h("span", { class: "muted", text: "This locks the overview verdict; then the window pass opens." })),
  ];
}

function lockedOverview() {
  const o = draft.overview;
  const verdict = o.verdict === "accept" ? "accepted" : "rejected";
  return h("details", { class: "ws-locked" },
    h("summary", null, `Overview ${verdict} and locked`,
      o.modes.length ? ` · ${o.modes.map(modeName).join(", ")}` : ""),
    h("p", { class: "ws-locked-text", text: o.verdict === "reject" ? o.text : caption.overview }));
}

function closedUnitSummary(unit) {
  const modes = unit.modes.length ? ` · ${unit.modes.map(modeName).join(", ")}` : "";
  const text = unit.verdict === "reject" && unit.scene !== undefined ? ` — ${unit.scene} ${unit.shot}` : "";
  return h("div", { class: "ws-closed-unit" }, closedNote(),
    h("p", { text: `${verdictText(unit.verdict)}${modes}${text}` }));
}

function unitNav() {
  const chips = originals.map((w, position) => h("button", {
    type: "button", class: "ws-chip", dataset: { unit: position }, title: `Window ${position + 1}: ${span(w.start, w.end)}`,
    "aria-current": position === view.unit ? "true" : null, onclick: () => goToUnit(position, { seek: true }),
  }, String(position + 1)));
  chips.push(h("button", {
    type: "button", class: "ws-chip ws-chip-wide", dataset: { unit: N }, "aria-current": view.unit >= N ? "true" : null,
    onclick: () => goToUnit(N),
  }, "Segmentation"));
  return h("nav", { class: "ws-units", "aria-label": "Windows" }, chips);
}

function renderWindowPass() {
  return [
    lockedOverview(),
    unitNav(),
    h("p", { class: "muted ws-summary", id: "progress-summary" }),
    view.unit >= N ? renderSegmentation() : renderWindow(view.unit),
    h("ul", { class: "ws-checks", id: "checks", "aria-live": "polite" }),
    h("div", { class: "ws-actions" },
      h("button", { type: "button", onclick: () => goToUnit(view.unit - 1, { seek: true }), disabled: view.unit === 0 }, "‹ Previous ", kbd("P")),
      h("button", { type: "button", onclick: () => goToUnit(view.unit + 1, { seek: true }), disabled: view.unit >= N }, "Next ", kbd("N"), " ›"),
      h("span", { class: "ws-grow" }),
      h("button", { type: "button", class: "primary", id: "submit", onclick: submitAll }, "Submit to QC ", kbd("Ctrl", "Enter"))),
  ];
}

function renderWindow(position) {
  const o = originals[position];
  const w = draft.windows[position];
  const key = `w:${position}`;
  return h("article", { class: "ws-unit", id: "unit", dataset: { unit: position } },
    unitHead(`Window ${position + 1} of ${N}`, span(o.start, o.end), closedUnit(key) ? null : verdictButtons(key, w.verdict)),
    // The original texts; while rejected, the editors start from them and the redlines show what changed.
    h("dl", { class: "ws-texts", hidden: w.verdict === "reject" && !closedUnit(key) },
      h("dt", { text: "Scene" }), h("dd", { class: "ws-scene", text: o.scene || "(empty)" }),
      h("dt", { text: "Shot" }), h("dd", { class: "ws-shot", text: o.shot || "(empty)" })),
    closedUnit(key) ? closedUnitSummary(w) : null,
    w.verdict === "reject" && !closedUnit(key)
      ? h("div", { class: "ws-editor" },
        textField({
          id: "window-scene", label: "Corrected scene", original: o.scene, value: w.scene, rows: 2,
          onInput: (value) => { draft.windows[position].scene = value; edited(key); },
        }),
        textField({
          id: "window-shot", label: "Corrected shot", original: o.shot, value: w.shot, rows: 2,
          onInput: (value) => { draft.windows[position].shot = value; edited(key); },
        }),
        h("div", { class: "ws-times" },
          h("div", { class: "ws-time-group" },
            numberField({ id: "window-start", label: "Start (s)", value: w.start, onInput: (value) => { draft.windows[position].start = value; edited(key); } }),
            h("button", { type: "button", onclick: () => setFromPlayhead("start") }, "From playhead ", kbd("S"))),
          h("div", { class: "ws-time-group" },
            numberField({ id: "window-end", label: "End (s)", value: w.end, onInput: (value) => { draft.windows[position].end = value; edited(key); } }),
            h("button", { type: "button", onclick: () => setFromPlayhead("end") }, "From playhead ", kbd("E"))),
          h("span", { class: "muted ws-original-times", text: `original ${span(o.start, o.end)}` })),
        modePicker(key))
      : null);
}

function renderSegmentation() {
  const s = draft.segmentation;
  return h("article", { class: "ws-unit", id: "unit", dataset: { unit: N } },
    unitHead("Segmentation", "judged once for the whole caption", closedUnit("segmentation") ? null : verdictButtons("segmentation", s.verdict)),
    s.verdict === "reject" ? null : h("p", { class: "muted ws-intro" },
      "Are the timestamps where the events are? Reject when windows merge distinct events, miss a shot change, sit on a fixed grid rather than on content, or are timestamped away from the event."),
    s.verdict === "reject" ? null : h("ol", { class: "ws-spans" }, draft.windows.map((w, i) => h("li", { class: "ws-num", text: `${i + 1}: ${span(w.start, w.end)}` }))),
    closedUnit("segmentation") ? closedUnitSummary(s) : null,
    s.verdict === "reject" && !closedUnit("segmentation") ? h("div", { class: "ws-editor" }, boundaryEditor(), modePicker("segmentation")) : null);
}

function boundaryEditor() {
  const rows = draft.segmentation.windows.map((w, r) => {
    const edit = (field) => (value) => { draft.segmentation.windows[r][field] = value; edited("segmentation"); };
    // Multi-line: a scene or shot is a sentence or two, and all of it should be readable.
    const text = (field, label) => {
      const input = h("textarea", { id: `seg-${field}-${r}`, rows: 2, value: w[field], placeholder: label, "aria-label": `${label} of corrected window ${r + 1}` });
      input.addEventListener("input", () => edit(field)(input.value));
      return input;
    };
    const row = h("li", { class: "ws-row", dataset: { row: r } },
      h("span", { class: "ws-row-n", text: String(r + 1) }),
      numberField({ id: `seg-start-${r}`, label: "Start", value: w.start, onInput: edit("start") }),
      numberField({ id: `seg-end-${r}`, label: "End", value: w.end, onInput: edit("end") }),
      h("span", { class: "ws-row-actions" },
        h("button", { type: "button", onclick: () => mergeRow(r), disabled: r === draft.segmentation.windows.length - 1, title: "Merge with the next window (M)" }, "Merge with next"),
        h("button", { type: "button", onclick: () => { selectRow(r); splitAtPlayhead(); }, title: "Split at the playhead (X)" }, "Split at playhead")),
      h("span", { class: "ws-row-texts" }, text("scene", "Scene"), text("shot", "Shot")));
    row.addEventListener("focusin", () => selectRow(r));
    row.addEventListener("click", (event) => {
      if (event.target === row || event.target.classList.contains("ws-row-n")) { selectRow(r); player.seek(w.start); }
    });
    return row;
  });
  return h("div", { class: "ws-boundaries" },
    h("p", { class: "ws-label", title: "Select a window by clicking it or playing into it. Boundaries dragged on the timeline snap to shot changes; hold Shift not to." },
      "Corrected windows: ", kbd("M"), " merge with the next · ", kbd("X"), " split at the playhead · ",
      kbd("S"), " / ", kbd("E"), " start / end from the playhead · or drag the boundaries on the timeline (Shift: no snapping)."),
    h("ol", { class: "ws-rows", id: "seg-rows" }, rows),
    h("button", { type: "button", class: "link", onclick: resetBoundaries }, "Start again from the window pass's windows"));
}

function renderDone() {
  const state = server.state;
  const judged = draft.windows.filter((w) => w.verdict === "reject").length;
  const title = { approved: "Approved", in_review: "In QC review", submitted: "Submitted to QC", returned: "Returned by QC", assigned: "Not started" }[state] || state;
  const next = h("button", { type: "button", class: "primary", id: "start-next", onclick: startNext }, "Start next ", kbd("Enter"));
  queueMicrotask(() => next.focus());
  return [
    h("div", { class: "ws-done" },
      h("h2", { text: title }),
      h("p", { text: state === "submitted" ? "Thank you. A QC reviewer checks it next; if they return it, it comes back to the top of your queue with their comment." : "Nothing to do here for now." }),
      h("p", { class: "muted", text: `Overview ${verdictText(draft.overview.verdict).toLowerCase()} · ${judged} of ${N} windows rejected · segmentation ${verdictText(draft.segmentation.verdict).toLowerCase()}` }),
      h("p", { class: "ws-actions" }, next, h("a", { href: `/studies/${data.study}/queue/` }, "Back to your queue"))),
  ];
}

// ------------------------------------------------------------------ actions

function goToUnit(unit, { seek = false } = {}) {
  if (pass() !== "windows") return;
  const target = Math.min(Math.max(unit, 0), N);
  if (target !== view.unit && !timesAllowLeaving("move on")) return;
  view.unit = target;
  view.segRow = 0;
  render();
  if (view.unit < N) {
    const w = draft.windows[view.unit];
    if (seek) player.seek(w.start);
    if (view.loop) view.loopSpan = [w.start, w.end];
  }
  viewChanged();
}

function accept() {
  const key = currentKey();
  if (!key || refuseClosed(key) || !timesAllowLeaving("accept")) return;
  const unit = unitOf(draft, key);
  if (unit.verdict === "reject") stash.set(key, structuredClone(unit));
  if (key === "overview") setUnit(draft, key, { verdict: "accept", text: "", modes: [] });
  else if (key === "segmentation") setUnit(draft, key, { verdict: "accept", modes: [], windows: [] });
  else setUnit(draft, key, { ...normWindow(positionOf(key), null), verdict: "accept" });
  edited(key);
  if (isWindowKey(key)) goToUnit(view.unit + 1, { seek: true });
  else render();
}

function reject() {
  const key = currentKey();
  if (!key || refuseClosed(key)) return;
  const unit = unitOf(draft, key);
  if (unit.verdict !== "reject") {
    let next = stash.get(key);
    if (!next && key === "overview") next = { verdict: "reject", text: caption.overview, modes: [] };
    if (!next && key === "segmentation") next = { verdict: "reject", modes: [], windows: draft.windows.map(({ start, end, scene, shot }) => ({ start, end, scene, shot })) };
    if (!next) next = { ...normWindow(positionOf(key), null), verdict: "reject" };
    setUnit(draft, key, { ...next, verdict: "reject" });
    edited(key);
    render();
  }
  // Straight into the text; the segmentation's rows are chosen on the timeline first.
  const field = key === "segmentation" ? null : panel.querySelector(".ws-editor textarea");
  if (field) {
    field.focus();
    field.setSelectionRange(field.value.length, field.value.length);
  }
}

function setMode(key, mode, on) {
  const unit = unitOf(draft, key);
  unit.modes = sortModes(on ? [...unit.modes, mode] : unit.modes.filter((m) => m !== mode));
  // What the person sees first, then the save: a failure in saving must not hide the change.
  refreshModes();
  refreshChecks();
  edited(key);
}

function toggleMode(number) {
  const key = currentKey();
  const mode = MODES[number - 1];
  if (!key || !mode || refuseClosed(key)) return;
  const unit = unitOf(draft, key);
  if (unit.verdict !== "reject") {
    say("Reject first (R): failure modes belong to a rejected unit; an accept carries none.");
    return;
  }
  if (mode.level === "caption" && key !== "segmentation") {
    say(`${mode.name} is judged once per caption, in the segmentation step.`);
    return;
  }
  setMode(key, mode.key, !unit.modes.includes(mode.key));
}

const playhead = () => Math.round(video.currentTime * 1000) / 1000;

function setFromPlayhead(field) {
  const key = currentKey();
  if (!key || refuseClosed(key)) return;
  if (key === "segmentation") {
    const row = draft.segmentation.windows[view.segRow];
    if (draft.segmentation.verdict !== "reject" || !row) return;
    row[field] = playhead();
    edited(key);
    const input = $(`seg-${field}-${view.segRow}`);
    if (input) input.value = String(row[field]);
  } else if (key !== "overview") {
    const w = unitOf(draft, key);
    if (w.verdict !== "reject") {
      say("Reject the window first (R) to change its timestamps.");
      return;
    }
    w[field] = playhead();
    edited(key);
    const input = $(`window-${field}`);
    if (input) input.value = String(w[field]);
  } else {
    return;
  }
  refreshTimeline();
  refreshChecks();
}

function selectRow(r) {
  view.segRow = Math.min(Math.max(r, 0), Math.max(draft.segmentation.windows.length - 1, 0));
  markSelected();
  refreshTimelineTools();
  if (view.loop) {
    const w = draft.segmentation.windows[view.segRow];
    if (w) view.loopSpan = [w.start, w.end];
  }
}

function segmentationEditable() {
  return currentKey() === "segmentation" && draft.segmentation.verdict === "reject" && !closedUnit("segmentation");
}

function mergeRow(r) {
  const list = draft.segmentation.windows;
  if (!segmentationEditable() || r < 0 || r >= list.length - 1) return;
  const [a, b] = [list[r], list[r + 1]];
  const join = (x, y) => (x.trim() === y.trim() ? x : [x, y].filter((t) => t.trim()).join(" "));
  list.splice(r, 2, { start: a.start, end: b.end, scene: join(a.scene, b.scene), shot: join(a.shot, b.shot) });
  view.segRow = r;
  edited("segmentation");
  render();
  say(`Merged windows ${r + 1} and ${r + 2}.`);
}

function splitAtPlayhead() {
  if (!segmentationEditable()) return;
  const t = playhead();
  const list = draft.segmentation.windows;
  const r = list.findIndex((w) => t > w.start + 0.01 && t < w.end - 0.01);
  if (r < 0) {
    say("Put the playhead inside a corrected window to split it there.");
    return;
  }
  const w = list[r];
  list.splice(r, 1, { ...w, end: t }, { ...w, start: t });
  view.segRow = r + 1;
  edited("segmentation");
  render();
  say(`Split window ${r + 1} at ${seconds(t)}.`);
}

function resetBoundaries() {
  if (!segmentationEditable()) return;
  draft.segmentation.windows = draft.windows.map(({ start, end, scene, shot }) => ({ start, end, scene, shot }));
  view.segRow = 0;
  edited("segmentation");
  render();
}

function move(step) {
  if (pass() === "windows") {
    goToUnit(view.unit + step, { seek: true });
    return;
  }
  // The overview pass has no windows to judge: N and P seek between them.
  const t = video.currentTime;
  const starts = originals.map((w) => w.start);
  const target = step > 0 ? starts.find((s) => s > t + 0.05) : [...starts].reverse().find((s) => s < t - 0.25);
  player.seek(target ?? (step > 0 ? t : 0));
}

function setRate(rate) {
  player.setRate(rate);
  $("rate").value = String(rate);
  viewChanged();
}

function changeRate(step) {
  const index = RATES.indexOf(video.playbackRate);
  const next = RATES[Math.min(Math.max((index < 0 ? 3 : index) + step, 0), RATES.length - 1)];
  setRate(next);
  say(`Speed ${next}×`);
}

function loopWindow() {
  if (pass() === "windows") {
    if (view.unit >= N && draft.segmentation.verdict === "reject") {
      const w = draft.segmentation.windows[view.segRow];
      return w ? [w.start, w.end] : null;
    }
    const w = draft.windows[Math.min(view.unit, N - 1)];
    return [w.start, w.end];
  }
  const index = player.currentIndex();
  return index >= 0 ? [originals[index].start, originals[index].end] : null;
}

function toggleLoop(on = !view.loop) {
  const spanNow = on ? loopWindow() : null;
  if (on && !spanNow) {
    say("Put the playhead inside a window to loop it.");
    return;
  }
  view.loop = on;
  view.loopSpan = spanNow;
  $("loop-button").setAttribute("aria-pressed", String(on));
  $("loop-button").classList.toggle("chosen", on);
  if (on && (video.currentTime < spanNow[0] || video.currentTime >= spanNow[1])) {
    activity.quietly();
    player.seek(spanNow[0]);
  }
  viewChanged();
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  return { response, answer };
}

async function transition(url, what, extra = {}) {
  if (busy || server.state !== EDITABLE) return null;
  busy = true;
  try {
    if (!(await sync.flush())) {
      if (!sync.blocked) say(`Your latest changes are not saved yet (no connection?), so ${what} must wait. They are kept on this device.`, "error");
      return null;
    }
    const { response, answer } = await post(url, { ...extra, base_version: sync.version });
    if (response.ok) return answer;
    if (response.status === 409) {
      sync.block();
      conflict(answer.current, answer.detail, fromPass(server.annotator_pass));
    } else {
      say(answer.detail || `The server refused: ${response.status}.`, "error", { sticky: true });
    }
  } catch {
    say(`No connection: ${what} must wait. Nothing is lost.`, "error");
  } finally {
    busy = false;
  }
  return null;
}

async function lockOverview() {
  const problems = overviewProblems(draft.overview);
  if (problems.length) {
    say(problems.join(" "), "error");
    refreshChecks();
    return;
  }
  const answer = await transition(`/api/annotations/${data.id}/lock-overview/`, "submitting the overview verdict");
  if (!answer) return;
  server = pickServer(answer);
  sync.setVersion(answer.version);
  stash.clear();
  view.unit = 0;
  render();
  player.seek(draft.windows[0]?.start || 0);
  say("Overview verdict locked. Now judge each window.", "ok");
  viewChanged();
  offerLockUndo(answer.undo);
}

// Locking the overview and submitting can be undone for a few seconds (undo-toast.js).
function offerLockUndo(undo) {
  if (!undo || undo.action !== "lock_overview") return;
  offerUndo({
    annotationId: data.id,
    seconds: undo.seconds_left,
    message: "Overview verdict locked.",
    // Window verdicts given meanwhile are saved first; they stay when the overview reopens.
    prepare: async () => {
      if (await sync.flush()) return true;
      say("Your latest changes are not saved yet, so the undo must wait.", "error");
      return false;
    },
    onUndone: (answer) => {
      server = pickServer(answer);
      sync.setVersion(answer.version);
      render();
      say("Undone: the overview is open again.", "ok");
      viewChanged();
    },
    onRefused: (message) => say(message, "error", { sticky: true }),
  });
}

function offerSubmitUndo(undo) {
  if (!undo || undo.action !== "submit") return;
  offerUndo({
    annotationId: data.id,
    seconds: undo.seconds_left,
    message: "Submitted to QC.",
    // The page was closed for editing; it opens again from the server's copy.
    onUndone: () => window.location.reload(),
    onRefused: (message) => say(message, "error", { sticky: true }),
  });
}

async function submitAll() {
  if (pass() !== "windows" || !timesAllowLeaving("submit")) return;
  const open = firstOpenUnit();
  if (open >= 0) {
    if (open !== view.unit) goToUnit(open, { seek: true });
    const label = open >= N ? "Segmentation" : `Window ${open + 1}`;
    say(`${label}: ${unitProblems(open).join(" ")}`, "error");
    return;
  }
  const answered = {};
  for (const u of returnedUnits()) {
    const reply = (replies[pageUnit(u.unit)] || "").trim();
    if (reply) answered[u.unit] = reply;
  }
  const answer = await transition(`/api/annotations/${data.id}/submit/`, "submitting", { replies: answered });
  if (!answer) return;
  server = pickServer(answer);
  sync.setVersion(answer.version);
  sync.dropAll();
  sync.block();
  sync.clearLocal();
  video.pause();
  say("");
  render();
  showStatus("readonly", {});
  offerSubmitUndo(answer.undo);
}

async function startNext() {
  try {
    const { response, answer } = await post(`/api/studies/${data.study}/my-queue/next/`);
    if (response.ok) {
      window.location.assign(answer.url);
      return;
    }
    say(answer.detail || "Nothing left in your queue.", "ok", { sticky: true });
  } catch {
    say("The server cannot be reached; try again in a moment.", "error");
  }
}

// ------------------------------------------------------------------ conflicts

let pending = null;

const unitLabel = (key) => (key === "overview" ? "Overview" : key === "segmentation" ? "Segmentation" : `Window ${positionOf(key) + 1}`);
const verdictText = (verdict) => ({ accept: "Accepted", reject: "Rejected" }[verdict] || "Not judged");

function describe(key, unit) {
  const lines = [h("p", null, h("strong", { text: verdictText(unit.verdict) }),
    unit.modes.length ? ` · ${unit.modes.map(modeName).join(", ")}` : "")];
  if (unit.verdict !== "reject") return lines;
  if (key === "overview") lines.push(h("p", { class: "ws-quote", text: unit.text }));
  else if (key === "segmentation") lines.push(h("p", { class: "ws-num", text: unit.windows.map((w) => span(w.start, w.end)).join(" · ") }));
  else {
    lines.push(h("p", { class: "ws-num", text: span(unit.start, unit.end) }));
    lines.push(h("p", { class: "ws-quote", text: unit.scene }), h("p", { class: "ws-quote muted", text: unit.shot }));
  }
  return lines;
}

// `base`: the pass this tab last had from the server, or null when unknown (edits restored from this device).
function conflict(current, detail, base) {
  const theirs = fromPass(current.annotator_pass);
  activity.absorb(current.telemetry);
  if (current.state !== EDITABLE) {
    server = pickServer(current);
    draft = theirs;
    sync.dropAll();
    sync.block();
    sync.clearLocal();
    render();
    say(`This annotation is now ${current.state.replace("_", " ")} (changed in another tab or by QC); it cannot be edited here.`, "error", { sticky: true });
    return;
  }
  // Three-way: against `base`, what only one side changed is taken from it, and what both
  // changed is merged (merge.js); only true overlaps are left for the person to pick.
  const rows = [];
  const merged = new Map();
  const both = [];
  for (const key of sync.keys()) {
    const mine = unitOf(draft, key);
    const other = unitOf(theirs, key);
    if (same(mine, other)) {
      sync.drop(key);
      continue;
    }
    const lost = key === "overview" && current.overview_locked;
    if (lost || !base) {
      rows.push({ key, mine, other, lost });
      continue;
    }
    if (same(unitOf(base, key), other)) continue; // only this tab changed it
    const result = mergeUnit(mergeBase(base, key), mine, other, { modeOrder: MODES.map((mode) => mode.key) });
    if (result.conflict) rows.push({ key, mine, other, lost: false });
    else {
      merged.set(key, result.value);
      both.push(key);
    }
  }
  const elsewhere = base ? allKeys().filter((key) => !sync.has(key) && !same(unitOf(base, key), unitOf(theirs, key))) : [];
  pending = { current, theirs, merged, told: [...both, ...elsewhere] };
  if (!rows.length) {
    keepMine({ quiet: true });
    return;
  }
  showConflict(rows, detail);
}

// A unit as both sides started from it. An overview not yet rejected is edited from the original
// text (that is what the editor starts from), so that is the text both sides' edits are against.
function mergeBase(base, key) {
  const unit = unitOf(base, key);
  return key === "overview" && unit.verdict !== "reject" ? { ...unit, text: caption.overview } : unit;
}

const allKeys = () => ["overview", ...originals.map((w, position) => `w:${position}`), "segmentation"];

function showConflict(rows, detail) {
  $("conflict-detail").textContent = `${detail} Someone (perhaps you, in another tab) changed the same things as this tab in the parts below: choose, for each, which version to keep. Changes that did not overlap are merged.`;
  const diffs = [];
  fill($("conflict-changes"), ...rows.map(({ key, mine, other, lost }) => {
    const section = h("section", { class: "ws-change", dataset: { key } },
      h("h3", { text: unitLabel(key) }),
      h("div", { class: "ws-two" },
        h("div", null, h("h4", { text: "Saved elsewhere (theirs)" }), describe(key, other)),
        h("div", null, h("h4", { text: "This tab (yours, unsaved)" }), describe(key, mine))),
      lost ? h("p", { class: "ws-near-total", text: "The overview verdict was submitted and locked in the other tab, so your overview changes cannot be kept." })
        : h("div", { class: "ws-pick", role: "radiogroup", "aria-label": `${unitLabel(key)}: which version to keep` },
          h("label", { class: "inline" }, h("input", { type: "radio", name: `pick-${key}`, value: "mine", checked: true }), " Keep mine"),
          h("label", { class: "inline" }, h("input", { type: "radio", name: `pick-${key}`, value: "theirs" }), " Take theirs")));
    const fields = key === "overview" ? ["text"] : key === "segmentation" ? [] : ["scene", "shot"];
    for (const field of fields) {
      if (mine.verdict === "reject" && other.verdict === "reject" && mine[field] !== other[field]) {
        const line = h("p", { class: "ws-redline" });
        section.append(h("p", { class: "ws-label", text: `Yours against theirs (${field})` }), line);
        diffs.push([line, other[field], mine[field]]);
      }
    }
    return section;
  }));
  conflictDialog.hidden = false;
  $("keep-mine").focus();
  for (const [line, theirs, mine] of diffs) renderRedline(line, wordDiff(theirs, mine));
}

function adopt(current) {
  server = pickServer(current);
  sync.setVersion(current.version);
}

// Save the merge: theirs, with what was merged and, per conflicting unit, the version picked.
function keepMine({ quiet = false } = {}) {
  if (!pending) return;
  const { current, theirs, merged: mergedUnits = new Map(), told = [] } = pending;
  pending = null;
  const merged = structuredClone(theirs);
  const picked = (key) => conflictDialog.querySelector(`input[name="pick-${key}"]:checked`)?.value || "mine";
  for (const key of sync.keys()) {
    if (key === "overview" && current.overview_locked) sync.drop(key);
    else if (mergedUnits.has(key)) setUnit(merged, key, mergedUnits.get(key));
    else if (!conflictDialog.hidden && picked(key) === "theirs") {
      sync.drop(key);
      stash.delete(key);
    } else setUnit(merged, key, unitOf(draft, key));
  }
  if (told.length) say(`Merged with changes saved elsewhere: ${told.map(unitLabel).join(", ")}. Your own changes are kept.`, "ok");
  const changedView = !same(merged, draft) || current.overview_locked !== server.overview_locked;
  draft = merged;
  adopt(current);
  conflictDialog.hidden = true;
  sync.unblock();
  if (changedView || !quiet) render();
  sync.save();
}

// Theirs for every part listed in the dialog; the merged parts stay merged.
function takeTheirs() {
  for (const radio of conflictDialog.querySelectorAll("input[type=radio][value=theirs]")) radio.checked = true;
  keepMine();
}

$("keep-mine").addEventListener("click", () => keepMine());
$("take-theirs").addEventListener("click", takeTheirs);

// ------------------------------------------------------------------ keyboard

function toggleHelp(show = helpDialog.hidden) {
  helpDialog.hidden = !show;
  if (show) $("help-close").focus();
}

const ACTIONS = {
  play: () => player.toggle(),
  frameBack: () => player.step(-1),
  frameForward: () => player.step(1),
  back5: () => player.seek(video.currentTime - 5),
  forward5: () => player.seek(video.currentTime + 5),
  slower: () => changeRate(-1),
  faster: () => changeRate(1),
  loop: () => toggleLoop(),
  accept: () => server.state === EDITABLE && accept(),
  reject: () => server.state === EDITABLE && reject(),
  next: () => move(1),
  previous: () => move(-1),
  setStart: () => setFromPlayhead("start"),
  setEnd: () => setFromPlayhead("end"),
  merge: () => mergeRow(view.segRow),
  split: () => splitAtPlayhead(),
  zoomIn: () => zoom(1),
  zoomOut: () => zoom(-1),
  zoomFit: () => zoom(0),
  submit: () => (pass() === "overview" ? lockOverview() : pass() === "windows" ? submitAll() : startNext()),
  save: () => sync.save(),
  help: () => toggleHelp(),
};
const ONCE = new Set(["accept", "reject", "mode", "loop", "merge", "split", "submit", "help", "next", "previous"]);

document.addEventListener("keydown", (event) => {
  if (!conflictDialog.hidden) return;
  const hit = actionFor(event);
  if (!hit) {
    if (pass() === "done" && event.key === "Enter" && !isTyping(event.target) && event.target.tagName !== "BUTTON" && event.target.tagName !== "A") {
      event.preventDefault();
      startNext();
    }
    return;
  }
  if (hit.action === "escape") {
    if (!helpDialog.hidden) toggleHelp(false);
    else if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    return;
  }
  if (!helpDialog.hidden && hit.action !== "help") return;
  event.preventDefault();
  if (event.repeat && ONCE.has(hit.action)) return;
  if (hit.action === "mode") {
    if (server.state === EDITABLE) toggleMode(hit.mode);
    return;
  }
  ACTIONS[hit.action]?.();
});

$("help-button").addEventListener("click", () => toggleHelp(true));
$("help-close").addEventListener("click", () => toggleHelp(false));
helpDialog.addEventListener("click", (event) => { if (event.target === helpDialog) toggleHelp(false); });
renderHelp($("help-table"));
fill($("help-modes"), h("h3", { text: "Failure modes" }), h("dl", { class: "ws-help-modes" }, MODES.map((mode, i) => [
  h("dt", null, kbd(String(i + 1)), " ", mode.name),
  h("dd", null, mode.definition, " ", h("em", { text: mode.decision_test })),
])));

for (const button of document.querySelectorAll(".ws-controls [data-action]")) {
  button.addEventListener("click", () => ACTIONS[button.dataset.action]());
}
$("rate").addEventListener("change", (event) => {
  setRate(Number(event.target.value));
  event.target.blur();
});

// ------------------------------------------------------------------ playback

let frame = null;

function animate() {
  frame = null;
  if (view.loop && view.loopSpan && video.currentTime >= view.loopSpan[1] - 0.02) {
    activity.quietly();
    player.seek(view.loopSpan[0]);
  } else {
    player.update();
  }
  if (!video.paused) frame = requestAnimationFrame(animate);
}

video.addEventListener("play", () => {
  $("play-button").textContent = "Pause";
  if (!frame) frame = requestAnimationFrame(animate);
});
video.addEventListener("pause", () => {
  $("play-button").textContent = "Play";
  viewChanged();
});
video.addEventListener("seeked", () => sync.setUi(uiState()));

let playingIndex = -2;
player.onTime((t, index) => {
  if (index === playingIndex) return;
  playingIndex = index;
  $("playing-window").textContent = index >= 0 ? `· playhead in window ${index + 1}` : "";
  if (timeline.classList.contains("ws-corrected") && index >= 0 && index !== view.segRow) selectRow(index);
});

timeline.addEventListener("click", (event) => {
  const segment = event.target.closest(".segment");
  if (!segment || pass() !== "windows") return;
  const index = Number(segment.dataset.index);
  if (timeline.classList.contains("ws-corrected")) selectRow(index);
  else if (view.unit < N && index !== view.unit) goToUnit(index);
}, true);

// ------------------------------------------------------------------ focus, leaving, restoring


function leave() {
  if (server.state !== EDITABLE || sync.blocked) return;
  sync.setUi(uiState());
  sync.save({ keepalive: true });
}
window.addEventListener("pagehide", leave);
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") leave(); });

function restore() {
  const local = sync.readLocal();
  const ui = local?.ui && Object.keys(local.ui).length ? local.ui : server.ui_state || {};
  view.unit = Math.min(Math.max(Number(ui.unit) || 0, 0), N);
  view.segRow = Number(ui.seg_row) || 0;
  const restored = [];
  for (const [key, value] of Object.entries(local?.units || {})) {
    if (key !== "overview" && key !== "segmentation" && !isWindowKey(key)) continue;
    if (key === "overview" && server.overview_locked) continue;
    const probe = structuredClone(draft);
    setUnit(probe, key, value);
    if (same(unitOf(probe, key), unitOf(draft, key))) continue;
    setUnit(draft, key, value);
    restored.push(key);
  }
  render();
  const rate = Number(ui.rate);
  if (RATES.includes(rate)) setRate(rate);
  const seekTo = () => {
    const t = Number(ui.time);
    if (t > 0) {
      activity.quietly();
      player.seek(t);
    }
    if (ui.loop) toggleLoop(true);
  };
  if (video.readyState >= 1) seekTo();
  else video.addEventListener("loadedmetadata", seekTo, { once: true });
  const field = ui.focus?.id && $(ui.focus.id);
  if (field && server.state === EDITABLE) {
    field.focus();
    const at = Number.isFinite(ui.focus.at) ? ui.focus.at : field.value.length;
    try { field.setSelectionRange(at, at); } catch { /* number inputs have no selection */ }
  }
  if (server.state !== EDITABLE) {
    sync.block();
    sync.clearLocal();
    showStatus("readonly", {});
    return;
  }
  if (!restored.length) {
    sync.setUi(ui);
    return;
  }
  // Until the person chooses, the copy on this device keeps the version its edits were based on.
  if (local.version !== server.version) sync.setVersion(local.version);
  for (const key of restored) sync.mark(key);
  if (local.version !== server.version) {
    // Edits kept on this device were made on an older version: let the person choose.
    sync.block();
    conflict(pickServer(data), "Changes kept on this device were made before the latest saved version.", null);
  } else {
    say("Restored your unsaved changes from this device; saving them now.", "ok");
  }
}

restore();
// Reloaded within the undo window: the undo is still offered, for the seconds left.
offerLockUndo(data.undo);
offerSubmitUndo(data.undo);
root.dataset.ready = "true";

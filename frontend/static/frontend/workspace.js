// The annotator workspace: overview pass, window pass, segmentation, submit to QC.
//
// The page gets its first payload from json_script and then talks to the same
// REST API as any other client: PATCH .../draft/ (autosave with base_version),
// POST .../lock-overview/, POST .../submit/. The redline and edit size come from edits.js.
// Caption text is untrusted: it only ever reaches the page through textContent.

import { resizableSplit } from "./workspace-split.js";
import { Activity } from "./workspace-activity.js";
import { duration, fill, h, kbd, same } from "./workspace-dom.js";
import { actionFor, isTyping, renderHelp } from "./workspace-keys.js";
import { Sync } from "./workspace-sync.js";
import {
  $, EDITABLE, MODES, N, RATES, S, act, clip, conflictDialog, currentKey, data, edited, fault, fromPass, helpDialog, isWindowKey, pass, pickServer, player, root, say, segmentationEditable, setUnit, timeline, uiState, unitOf, unitValid, video, view, viewChanged,
} from "./workspace-state.js";
import { refreshChecks, showStatus } from "./workspace-fields.js";
import { fitPanel, refreshTimeline, render, zoom } from "./workspace-render.js";
import {
  accept, changeRate, goToUnit, lockOverview, mergeRow, move, offerLockUndo, offerSubmitUndo, post, reject, resetBoundaries, selectRow, setFromPlayhead, setMode, setRate, splitAtPlayhead, startNext, submitAll, toggleLoop, toggleMode,
} from "./workspace-actions.js";
import { conflict } from "./workspace-conflict.js";
import { isOpen as guidelinesOpen, toggle as toggleGuidelines } from "./guidelines-panel.js";

// The drawn controls call the actions through act (workspace-state.js); fill it before anything is drawn.
Object.assign(act, {
  accept, goToUnit, lockOverview, mergeRow, reject, resetBoundaries, selectRow, setFromPlayhead, setMode, splitAtPlayhead, startNext, submitAll,
});

$("active-time").textContent = `Active ${duration(S.server.active_seconds || 0)}`; // there from the start: the header never shifts
S.activity = new Activity({
  video, duration: clip.duration, telemetry: S.server.telemetry, activeSeconds: S.server.active_seconds,
  onTick: (a) => {
    $("active-time").textContent = `Active ${duration(a.total)}`;
    if (a.extras().pending && S.server.state === EDITABLE) S.sync.touch();
  },
});

// Visiting the workspace opens the item again: the server counts this visit's active time from
// now, not from the previous visit's last save.
if (S.server.state === EDITABLE) post(`/api/annotations/${data.id}/open/`).catch(() => {});

let sentUi = JSON.stringify(S.server.ui_state || {});

S.sync = new Sync({
  id: data.id,
  version: S.server.version,
  unit: (key) => {
    const value = unitOf(S.draft, key);
    return { value, valid: unitValid(key, value, S.draft) };
  },
  extras: () => {
    const extras = S.activity.extras();
    const ui = uiState();
    if (JSON.stringify(ui) !== sentUi) extras.changes.ui_state = ui;
    return extras;
  },
  extrasSent: (changes) => {
    S.activity.sent(changes);
    if (changes.ui_state) sentUi = JSON.stringify(changes.ui_state);
  },
  onSaved: (answer) => {
    S.server = pickServer(answer);
  },
  onConflict: (current, detail) => conflict(current, detail, fromPass(S.server.annotator_pass)),
  onRejected: (detail) => say(`Not saved: ${detail}`, "error"),
  onStatus: showStatus,
});

// Faults are errors of this code (a ReferenceError, say), not the browser's DOMExceptions such
// as a play() cut short by a pause, which say nothing about what is saved.
const isFault = (error) => error instanceof Error && !(error instanceof DOMException);
window.addEventListener("error", (event) => { if (isFault(event.error)) fault(event.message); });
window.addEventListener("unhandledrejection", (event) => { if (isFault(event.reason)) fault(event.reason.message); });

window.addEventListener("resize", fitPanel);
resizableSplit({ layout: document.querySelector(".ws-layout"), splitter: $("splitter"), onResize: () => player.scheduleRuler() });

// Boundaries dragged on the timeline: the numbers in the fields follow while dragging.
player.onRetime((changes, { done }) => {
  const key = currentKey();
  if (key === "segmentation" && segmentationEditable()) {
    for (const { index, start, end } of changes) {
      const row = S.draft.segmentation.windows[index];
      Object.assign(row, { start, end });
      for (const field of ["start", "end"]) {
        const input = $(`seg-${field}-${index}`);
        if (input) input.value = String(row[field]);
      }
    }
    if (changes.length) selectRow(changes[0].index);
  } else if (key && isWindowKey(key)) {
    const w = unitOf(S.draft, key);
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
  accept: () => S.server.state === EDITABLE && accept(),
  reject: () => S.server.state === EDITABLE && reject(),
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
  save: () => S.sync.save(),
  help: () => toggleHelp(),
  guidelines: () => toggleGuidelines(),
};
const ONCE = new Set(["accept", "reject", "mode", "loop", "merge", "split", "submit", "help", "guidelines", "next", "previous"]);

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
    else if (guidelinesOpen()) toggleGuidelines(false);
    else if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    return;
  }
  if (!helpDialog.hidden && hit.action !== "help") return;
  event.preventDefault();
  if (event.repeat && ONCE.has(hit.action)) return;
  if (hit.action === "mode") {
    if (S.server.state === EDITABLE) toggleMode(hit.mode);
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
    S.activity.quietly();
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
video.addEventListener("seeked", () => S.sync.setUi(uiState()));

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
  if (S.server.state !== EDITABLE || S.sync.blocked) return;
  S.sync.setUi(uiState());
  S.sync.save({ keepalive: true });
}
window.addEventListener("pagehide", leave);
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") leave(); });

function restore() {
  const local = S.sync.readLocal();
  const ui = local?.ui && Object.keys(local.ui).length ? local.ui : S.server.ui_state || {};
  view.unit = Math.min(Math.max(Number(ui.unit) || 0, 0), N);
  view.segRow = Number(ui.seg_row) || 0;
  const restored = [];
  for (const [key, value] of Object.entries(local?.units || {})) {
    if (key !== "overview" && key !== "segmentation" && !isWindowKey(key)) continue;
    if (key === "overview" && S.server.overview_locked) continue;
    const probe = structuredClone(S.draft);
    setUnit(probe, key, value);
    if (same(unitOf(probe, key), unitOf(S.draft, key))) continue;
    setUnit(S.draft, key, value);
    restored.push(key);
  }
  render();
  const rate = Number(ui.rate);
  if (RATES.includes(rate)) setRate(rate);
  const seekTo = () => {
    const t = Number(ui.time);
    if (t > 0) {
      S.activity.quietly();
      player.seek(t);
    }
    if (ui.loop) toggleLoop(true);
  };
  if (video.readyState >= 1) seekTo();
  else video.addEventListener("loadedmetadata", seekTo, { once: true });
  const field = ui.focus?.id && $(ui.focus.id);
  if (field && S.server.state === EDITABLE) {
    field.focus();
    const at = Number.isFinite(ui.focus.at) ? ui.focus.at : field.value.length;
    try { field.setSelectionRange(at, at); } catch { /* number inputs have no selection */ }
  }
  if (S.server.state !== EDITABLE) {
    S.sync.block();
    S.sync.clearLocal();
    showStatus("readonly", {});
    return;
  }
  if (!restored.length) {
    S.sync.setUi(ui);
    return;
  }
  // Until the person chooses, the copy on this device keeps the version its edits were based on.
  if (local.version !== S.server.version) S.sync.setVersion(local.version);
  for (const key of restored) S.sync.mark(key);
  if (local.version !== S.server.version) {
    // Edits kept on this device were made on an older version: let the person choose.
    S.sync.block();
    conflict(pickServer(data), "Changes kept on this device were made before the latest saved version.", null);
  } else {
    say("Restored your unsaved changes.", "ok");
  }
}

restore();
// Reloaded within the undo window: the undo is still offered, for the seconds left.
offerLockUndo(data.undo);
offerSubmitUndo(data.undo);
root.dataset.ready = "true";

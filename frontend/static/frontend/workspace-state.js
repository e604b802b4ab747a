// The workspace's shared state: the page's data, the server's copy and the draft (S), the
// unit model, which pass and unit are open, the returned units, messages, and the player.

import { Player } from "./player.js";
import { isTyping } from "./workspace-keys.js";
import { unitModel } from "./workspace-units.js";

export const data = JSON.parse(document.getElementById("workspace-data").textContent);
export const { clip, caption, taxonomy } = data;
export const originals = caption.windows;
export const N = originals.length;
export const MODES = taxonomy.modes;
export const CUT = data.near_total_cut;
export const LIMIT = clip.duration + 0.5;
export const RATES = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2];
// A closed or archived study is read-only: no state is editable then (the server refuses too).
export const EDITABLE = data.read_only ? "" : "in_progress";

export const $ = (id) => document.getElementById(id);
export const root = $("workspace");
export const panel = $("panel");
export const video = $("video");
export const timeline = $("timeline");
export const notice = $("notice");
export const saveStatus = $("save-status");
export const helpDialog = $("help");
export const conflictDialog = $("conflict");

export const {
  num, sortModes, modeName, normWindow, fromPass, isWindowKey, positionOf, unitOf, setUnit,
  windowFieldProblems, acceptProblem, timesProblem, timelineFieldProblems, unitTimeProblem, unitValid, overviewProblems,
  unitProblems: problemsOf, firstOpenUnit: firstOpen, windowJudged, segmentationJudged,
} = unitModel(data);
export const unitProblems = (unit) => problemsOf(S.draft, unit);
export const firstOpenUnit = () => firstOpen(S.draft);

export const S = { server: pickServer(data), draft: null, sync: null, activity: null };
S.draft = fromPass(S.server.annotator_pass);
export const stash = new Map(); // a unit's rejected version, kept while it is accepted, in case of a change of mind
export const view = { unit: 0, segRow: 0, loop: false, loopSpan: null };

export function pickServer(snapshot) {
  const keys = ["version", "state", "overview_locked", "return_comment", "returned_units", "annotator_pass", "ui_state", "telemetry", "active_seconds"];
  return Object.fromEntries(keys.map((key) => [key, snapshot[key]]));
}

export const pass = () => (S.server.state !== EDITABLE ? "done" : S.server.overview_locked ? "windows" : "overview");
export const currentKey = () => {
  if (pass() === "overview") return "overview";
  if (pass() !== "windows") return null;
  return view.unit >= N ? "segmentation" : `w:${view.unit}`;
};

// ------------------------------------------------------------------ returned units

// After a return that names units, only those reopen; the others stay as submitted.
// The server names a window "window:<index>", the page "w:<position>".
export const pageUnit = (unit) => {
  if (!unit.startsWith("window:")) return unit;
  const position = originals.findIndex((o) => o.index === Number(unit.slice(7)));
  return `w:${position}`;
};
export const returnedUnits = () => (S.server.state === EDITABLE ? S.server.returned_units || [] : []);
export const closedUnit = (key) => {
  const units = returnedUnits();
  return Boolean(key) && units.length > 0 && !units.some((u) => pageUnit(u.unit) === key);
};
export const replies = {}; // page unit key -> the annotator's reply to the reviewer's comment
export const segmentationEditable = () =>
  currentKey() === "segmentation" && S.draft.segmentation.verdict === "reject" && !closedUnit("segmentation");

// What the drawn controls do (accept, go to a unit, submit, ...). workspace.js fills this from
// workspace-actions.js at start, and the drawing modules bind act.accept and the like instead of
// importing the actions, which redraw: the modules import one way only,
// state <- fields <- render <- conflict <- actions <- workspace.js (tests/js/import-cycles.test.js).
export const act = {};

export function refuseClosed(key) {
  if (!closedUnit(key)) return false;
  say(`QC did not return ${unitLabel(key).toLowerCase()}: it stays as you submitted it.`);
  return true;
}

export function uiState() {
  const active = document.activeElement;
  const focus = isTyping(active) && active.id ? { id: active.id, at: active.selectionStart ?? null } : null;
  return {
    unit: view.unit, seg_row: view.segRow, loop: view.loop,
    time: Math.round(video.currentTime * 100) / 100, rate: video.playbackRate, focus,
  };
}

export function edited(key) {
  S.sync.setUi(uiState());
  S.sync.mark(key);
}

export function viewChanged() {
  S.sync.setUi(uiState());
  if (S.server.state === EDITABLE) S.sync.touch();
}

// ------------------------------------------------------------------ messages

export let noticeTimer = null;

// A fault in this page's code means nothing on screen can be trusted to be saved:
// say so, instead of leaving "All changes saved" up while the work is not.
export function fault(message) {
  S.sync.broken(`this page hit a fault (${message})`);
  say("Something went wrong in this page. Your changes are kept on this device: reload the page to go on.", "error", { sticky: true });
}
export function say(message, kind = "info", { sticky = false } = {}) {
  clearTimeout(noticeTimer);
  notice.className = `ws-banner ws-${kind}`;
  notice.textContent = message;
  notice.hidden = !message;
  if (message && !sticky) noticeTimer = setTimeout(() => { notice.hidden = true; }, 6000);
}

export const unitLabel = (key) => (key === "overview" ? "Overview" : key === "segmentation" ? "Segmentation" : `Window ${positionOf(key) + 1}`);
export const verdictText = (verdict) => ({ accept: "Accepted", reject: "Rejected" }[verdict] || "Not judged");

// ------------------------------------------------------------------ player, activity, autosave

export const player = new Player({
  video, timeline, clock: $("clock"), duration: clip.duration, fps: clip.fps, shots: clip.shot_changes || [],
});

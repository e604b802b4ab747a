// What the person does: move between units, accept, reject, tag modes, retime, merge and
// split corrected windows, play, and the transitions (lock the overview, submit, start next).

import { csrfToken } from "./redline.js";
import { seconds } from "./workspace-dom.js";
import { offerUndo } from "./undo-toast.js";
import {
  $, EDITABLE, MODES, N, RATES, S, acceptProblem, caption, currentKey, data, edited, firstOpenUnit, fromPass, isWindowKey, normWindow, originals, overviewProblems, pageUnit, panel, pass, pickServer, player, positionOf, refuseClosed, replies, returnedUnits, say, segmentationEditable, setUnit, sortModes, stash, unitLabel, unitOf, unitProblems, video, view, viewChanged,
} from "./workspace-state.js";
import { refreshChecks, refreshModes, showStatus, timesAllowLeaving } from "./workspace-fields.js";
import { markSelected, openReturnDetails, refreshTimeline, refreshTimelineTools, render } from "./workspace-render.js";
import { conflict } from "./workspace-conflict.js";

// ------------------------------------------------------------------ actions

export let busy = false;

export function goToUnit(unit, { seek = false } = {}) {
  if (pass() !== "windows") return;
  const target = Math.min(Math.max(unit, 0), N);
  if (target !== view.unit && !timesAllowLeaving("move on")) return;
  view.unit = target;
  view.segRow = 0;
  render();
  if (view.unit < N) {
    const w = S.draft.windows[view.unit];
    if (seek) player.seek(w.start);
    if (view.loop) view.loopSpan = [w.start, w.end];
  }
  viewChanged();
}

export function accept() {
  const key = currentKey();
  if (!key || refuseClosed(key) || !timesAllowLeaving("accept")) return;
  if (isWindowKey(key) && acceptProblem(S.draft, positionOf(key))) {
    say(`${unitLabel(key)}: ${acceptProblem(S.draft, positionOf(key))}`, "error");
    return;
  }
  const unit = unitOf(S.draft, key);
  if (unit.verdict === "reject") stash.set(key, structuredClone(unit));
  if (key === "overview") setUnit(S.draft, key, { verdict: "accept", text: "", modes: [] });
  else if (key === "segmentation") setUnit(S.draft, key, { verdict: "accept", modes: [], windows: [] });
  else setUnit(S.draft, key, { ...normWindow(positionOf(key), null), verdict: "accept" });
  edited(key);
  if (isWindowKey(key)) goToUnit(view.unit + 1, { seek: true });
  else render();
}

export function reject() {
  const key = currentKey();
  if (!key || refuseClosed(key)) return;
  const unit = unitOf(S.draft, key);
  if (unit.verdict !== "reject") {
    let next = stash.get(key);
    if (!next && key === "overview") next = { verdict: "reject", text: caption.overview, modes: [] };
    if (!next && key === "segmentation") next = { verdict: "reject", modes: [], windows: S.draft.windows.map(({ start, end, scene, shot }) => ({ start, end, scene, shot })) };
    if (!next) next = { ...normWindow(positionOf(key), null), verdict: "reject" };
    setUnit(S.draft, key, { ...next, verdict: "reject" });
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

export function setMode(key, mode, on) {
  const unit = unitOf(S.draft, key);
  unit.modes = sortModes(on ? [...unit.modes, mode] : unit.modes.filter((m) => m !== mode));
  // What the person sees first, then the save: a failure in saving must not hide the change.
  refreshModes();
  refreshChecks();
  edited(key);
}

export function toggleMode(number) {
  const key = currentKey();
  const mode = MODES[number - 1];
  if (!key || !mode || refuseClosed(key)) return;
  const unit = unitOf(S.draft, key);
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

export const playhead = () => Math.round(video.currentTime * 1000) / 1000;

export function setFromPlayhead(field) {
  const key = currentKey();
  if (!key || refuseClosed(key)) return;
  if (key === "segmentation") {
    const row = S.draft.segmentation.windows[view.segRow];
    if (S.draft.segmentation.verdict !== "reject" || !row) return;
    row[field] = playhead();
    edited(key);
    const input = $(`seg-${field}-${view.segRow}`);
    if (input) input.value = String(row[field]);
  } else if (key !== "overview") {
    const w = unitOf(S.draft, key);
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

export function selectRow(r) {
  view.segRow = Math.min(Math.max(r, 0), Math.max(S.draft.segmentation.windows.length - 1, 0));
  markSelected();
  refreshTimelineTools();
  if (view.loop) {
    const w = S.draft.segmentation.windows[view.segRow];
    if (w) view.loopSpan = [w.start, w.end];
  }
}

export function mergeRow(r) {
  const list = S.draft.segmentation.windows;
  if (!segmentationEditable() || r < 0 || r >= list.length - 1) return;
  const [a, b] = [list[r], list[r + 1]];
  const join = (x, y) => (x.trim() === y.trim() ? x : [x, y].filter((t) => t.trim()).join(" "));
  list.splice(r, 2, { start: a.start, end: b.end, scene: join(a.scene, b.scene), shot: join(a.shot, b.shot) });
  view.segRow = r;
  edited("segmentation");
  render();
  say(`Merged windows ${r + 1} and ${r + 2}.`);
}

export function splitAtPlayhead() {
  if (!segmentationEditable()) return;
  const t = playhead();
  const list = S.draft.segmentation.windows;
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

export function resetBoundaries() {
  if (!segmentationEditable()) return;
  S.draft.segmentation.windows = S.draft.windows.map(({ start, end, scene, shot }) => ({ start, end, scene, shot }));
  view.segRow = 0;
  edited("segmentation");
  render();
}

export function move(step) {
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

export function setRate(rate) {
  player.setRate(rate);
  $("rate").value = String(rate);
  viewChanged();
}

export function changeRate(step) {
  const index = RATES.indexOf(video.playbackRate);
  const next = RATES[Math.min(Math.max((index < 0 ? 3 : index) + step, 0), RATES.length - 1)];
  setRate(next);
  say(`Speed ${next}×`);
}

export function loopWindow() {
  if (pass() === "windows") {
    if (view.unit >= N && S.draft.segmentation.verdict === "reject") {
      const w = S.draft.segmentation.windows[view.segRow];
      return w ? [w.start, w.end] : null;
    }
    const w = S.draft.windows[Math.min(view.unit, N - 1)];
    return [w.start, w.end];
  }
  const index = player.currentIndex();
  return index >= 0 ? [originals[index].start, originals[index].end] : null;
}

export function toggleLoop(on = !view.loop) {
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
    S.activity.quietly();
    player.seek(spanNow[0]);
  }
  viewChanged();
}

export async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => ({ detail: response.statusText }));
  return { response, answer };
}

export async function transition(url, what, extra = {}) {
  if (busy || S.server.state !== EDITABLE) return null;
  busy = true;
  try {
    if (!(await S.sync.flush())) {
      if (!S.sync.blocked) say(`Your latest changes are not saved yet (no connection?), so ${what} must wait. They are kept on this device.`, "error");
      return null;
    }
    const { response, answer } = await post(url, { ...extra, base_version: S.sync.version });
    if (response.ok) return answer;
    if (response.status === 409 && answer.current) {  // an edit conflict; a study's state refusal has none
      S.sync.block();
      conflict(answer.current, answer.detail, fromPass(S.server.annotator_pass));
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

export async function lockOverview() {
  const problems = overviewProblems(S.draft.overview);
  if (problems.length) {
    say(problems.join(" "), "error");
    refreshChecks();
    return;
  }
  const answer = await transition(`/api/annotations/${data.id}/lock-overview/`, "submitting the overview verdict");
  if (!answer) return;
  S.server = pickServer(answer);
  S.sync.setVersion(answer.version);
  stash.clear();
  view.unit = 0;
  render();
  player.seek(S.draft.windows[0]?.start || 0);
  say("Overview verdict locked. Now judge each window.", "ok");
  viewChanged();
  offerLockUndo(answer.undo);
}

// Locking the overview and submitting can be undone for a few seconds (undo-toast.js).
export function offerLockUndo(undo) {
  if (!undo || undo.action !== "lock_overview") return;
  offerUndo({
    annotationId: data.id,
    seconds: undo.seconds_left,
    message: "Overview verdict locked.",
    host: $("undo-slot"),
    // Window verdicts given meanwhile are saved first; they stay when the overview reopens.
    prepare: async () => {
      if (await S.sync.flush()) return true;
      say("Your latest changes are not saved yet, so the undo must wait.", "error");
      return false;
    },
    onUndone: (answer) => {
      S.server = pickServer(answer);
      S.sync.setVersion(answer.version);
      render();
      say("Undone: the overview is open again.", "ok");
      viewChanged();
    },
    onRefused: (message) => say(message, "error", { sticky: true }),
  });
}

export function offerSubmitUndo(undo) {
  if (!undo || undo.action !== "submit") return;
  offerUndo({
    annotationId: data.id,
    seconds: undo.seconds_left,
    message: "Submitted to QC.",
    host: $("undo-slot"),
    // The page was closed for editing; it opens again from the server's copy.
    onUndone: () => window.location.reload(),
    onRefused: (message) => say(message, "error", { sticky: true }),
  });
}

export async function submitAll() {
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
  if (!answer) {
    if (returnedUnits().length) openReturnDetails(); // a reply may be what is missing
    return;
  }
  S.server = pickServer(answer);
  S.sync.setVersion(answer.version);
  S.sync.dropAll();
  S.sync.block();
  S.sync.clearLocal();
  video.pause();
  say("");
  render();
  showStatus("readonly", {});
  // A practice item's feedback (its verdicts against the gold ones) comes with the page.
  if ($("workspace").dataset.practice) {
    window.location.reload();
    return;
  }
  offerSubmitUndo(answer.undo);
}

export async function startNext() {
  try {
    const { response, answer } = await post(`/api/studies/${data.study}/my-queue/next/`);
    if (response.ok || answer.url) { // answer.url without ok: a participant's part is done (their code)
      window.location.assign(answer.url);
      return;
    }
    say(answer.detail || "Nothing left in your queue.", "ok", { sticky: true });
  } catch {
    say("The server cannot be reached; try again in a moment.", "error");
  }
}

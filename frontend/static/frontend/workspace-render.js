// Drawing the workspace: the return banner, the overview, window and segmentation panels,
// the done screen, and the timeline's windows for the unit in hand.

import { fill, h, kbd, span } from "./workspace-dom.js";
import {
  $, caption, clip, closedUnit, data, EDITABLE, edited, modeName, N, originals, pageUnit, panel, pass, player, positionOf, replies, returnedUnits, root, S, act, segmentationEditable, timeline, timesProblem, unitLabel, verdictText, video, view,
} from "./workspace-state.js";
import {
  autosize, modePicker, numberField, refreshChecks, refreshModes, resetSizes, scheduleSizes, textField, unitHead, verdictButtons,
} from "./workspace-fields.js";

export let bannerFor = null;

export function renderReturnBanner() {
  const banner = $("return-banner");
  const units = returnedUnits();
  const comment = S.server.return_comment;
  banner.hidden = pass() === "done" || (!units.length && !comment);
  const signature = JSON.stringify([units, comment, S.server.state]);
  if (banner.hidden || signature === bannerFor) return;
  bannerFor = signature;
  // One line, so that the player and the panel stay where they are; the comments and the
  // reply fields open over the page from it (and by themselves when a submit needs a reply).
  if (!units.length) {
    fill(banner, h("strong", { text: "Returned by QC:" }), " ",
      h("span", { id: "return-comment", class: "ws-return-line", title: comment, text: comment }),
      " ", h("span", { class: "muted", text: "Revise and submit again." }));
    return;
  }
  const names = units.map((u) => unitLabel(pageUnit(u.unit))).join(", ");
  fill(banner, h("details", { class: "ws-return-details", id: "return-details" },
    h("summary", null, h("strong", { text: "Returned by QC:" }), " ",
      h("span", { class: "ws-return-line", text: `${names} open again; the rest stay as you submitted them.` }), " ",
      h("span", { class: "link", text: `Comments and replies (${units.length})` })),
    h("div", { class: "ws-return-pop" },
      h("p", { class: "muted", text: "Only these units are open again. If you keep a unit unchanged, reply to say why." }),
      returnedList(units))));
}

export function openReturnDetails() {
  const details = $("return-details");
  if (details) details.open = true;
}

function returnedList(units) {
  return h("ul", { class: "ws-returned-units", id: "returned-units" }, units.map((u) => {
      const key = pageUnit(u.unit);
      const id = `reply-${u.unit.replace(":", "-")}`;
      const area = h("textarea", { id, rows: 2, value: replies[key] ?? u.reply ?? "", placeholder: "I disagree because …" });
      area.addEventListener("input", () => { replies[key] = area.value; });
      const go = h("button", { type: "button", class: "link", onclick: () => openUnit(key) }, unitLabel(key));
      return h("li", { class: "ws-returned-unit", dataset: { unit: u.unit } },
        go, " ", h("q", { class: "ws-return-note", text: u.comment }),
        h("label", { htmlFor: id, class: "ws-label", text: `Your reply on ${unitLabel(key).toLowerCase()} (needed only if you keep it unchanged)` }),
        area);
  }));
}

// The panel ends at the bottom of the window: the page itself never scrolls (its body does).
export function fitPanel() {
  const top = panel.getBoundingClientRect().top + window.scrollY;
  document.documentElement.style.setProperty("--ws-panel-max", `${Math.max(window.innerHeight - top - 8, 240)}px`);
  // A failure mode's definition pops up over the bottom of the video, where it hides no control.
  const box = video.getBoundingClientRect();
  document.documentElement.style.setProperty("--ws-tip-left", `${box.left + 8}px`);
  document.documentElement.style.setProperty("--ws-tip-bottom", `${window.innerHeight - box.bottom + 8}px`);
  document.documentElement.style.setProperty("--ws-tip-width", `${Math.max(box.width - 16, 200)}px`);
}

export function openUnit(key) {
  if (key === "overview" || pass() !== "windows") return;
  act.goToUnit(key === "segmentation" ? N : positionOf(key), { seek: true });
}

export function closedNote() {
  return h("p", { class: "ws-closed muted", text: "Not returned by QC: kept as you submitted it." });
}

// ------------------------------------------------------------------ rendering

export function refreshTimeline() {
  let windows;
  let editable = () => false;
  const segmenting = pass() === "windows" && view.unit >= N && S.draft.segmentation.verdict === "reject";
  if (segmenting) {
    windows = S.draft.segmentation.windows;
    timeline.classList.add("ws-corrected");
    editable = () => S.server.state === EDITABLE;
  } else {
    windows = pass() === "overview" ? originals : S.draft.windows;
    timeline.classList.remove("ws-corrected");
    if (pass() === "windows" && view.unit < N && S.draft.windows[view.unit].verdict === "reject") {
      editable = (index) => index === view.unit && S.server.state === EDITABLE;
    }
  }
  const drawable = windows.filter((w) => !timesProblem(w.start, w.end));
  if (drawable.length === windows.length) player.setWindows(windows, { editable, linked: segmenting });
  else player.setWindows(originals);
  markSelected();
  refreshTimelineTools();
}

// The timeline's split and merge buttons work on the corrected windows of the segmentation.
export function refreshTimelineTools() {
  const on = segmentationEditable() && S.server.state === EDITABLE;
  for (const id of ["tl-split", "tl-merge"]) $(id).disabled = !on;
  $("tl-merge").disabled = !on || view.segRow >= S.draft.segmentation.windows.length - 1;
}

export function zoom(direction) {
  if (direction) player.zoomBy(direction); else player.zoomFit();
  $("tl-zoom").textContent = `${player.zoom}×`;
}

{
  const shots = clip.shot_changes || [];
  $("shot-legend").textContent = shots.length
    ? `${shots.length} shot change${shots.length === 1 ? "" : "s"}; edges snap to them (Shift: no snapping)`
    : "No shot changes detected";
  // The orange mark is the legend of the shot changes drawn on the timeline: none, no mark.
  $("shot-legend").classList.toggle("ws-no-shots", !shots.length);
}

export function markSelected() {
  const corrected = timeline.classList.contains("ws-corrected");
  const selected = pass() !== "windows" ? -1 : corrected ? view.segRow : view.unit;
  for (const segment of timeline.querySelectorAll(".segment")) {
    segment.classList.toggle("ws-selected", Number(segment.dataset.index) === selected);
  }
  for (const row of panel.querySelectorAll(".ws-row")) {
    row.classList.toggle("ws-selected", Number(row.dataset.row) === view.segRow);
  }
}

export function render() {
  resetSizes();
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
  if (current === "done") fill(panel, ...renderDone());
  else {
    // The unit in a body that scrolls if it must; what is missing and the buttons stay in view.
    const parts = current === "overview" ? renderOverview() : renderWindowPass();
    fill(panel, h("div", { class: "ws-body", id: "panel-body" }, parts.slice(0, -2)), h("div", { class: "ws-foot" }, parts.slice(-2)));
  }
  fitPanel();
  for (const area of panel.querySelectorAll("textarea")) autosize(area);
  refreshTimeline();
  refreshModes();
  refreshChecks();
  scheduleSizes();
}

export function renderOverview() {
  const o = S.draft.overview;
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
          onInput: (value) => { S.draft.overview.text = value; edited("overview"); },
        }),
        modePicker("overview"))
      : null,
    h("ul", { class: "ws-checks", id: "checks", "aria-live": "polite" }),
    h("div", { class: "ws-actions" },
      h("button", { type: "button", class: "primary", id: "lock-overview", onclick: act.lockOverview },
        "Submit overview verdict ", kbd("Ctrl", "Enter")),
      h("span", { class: "muted", text: "This locks the overview verdict; then the window pass opens." })),
  ];
}

export function lockedOverview() {
  const o = S.draft.overview;
  const verdict = o.verdict === "accept" ? "accepted" : "rejected";
  return h("details", { class: "ws-locked" },
    h("summary", null, `Overview ${verdict} and locked`,
      o.modes.length ? ` · ${o.modes.map(modeName).join(", ")}` : ""),
    h("p", { class: "ws-locked-text", text: o.verdict === "reject" ? o.text : caption.overview }));
}

export function closedUnitSummary(unit) {
  const modes = unit.modes.length ? ` · ${unit.modes.map(modeName).join(", ")}` : "";
  const text = unit.verdict === "reject" && unit.scene !== undefined ? ` — ${unit.scene} ${unit.shot}` : "";
  return h("div", { class: "ws-closed-unit" }, closedNote(),
    h("p", { text: `${verdictText(unit.verdict)}${modes}${text}` }));
}

export function unitNav() {
  const chips = originals.map((w, position) => h("button", {
    type: "button", class: "ws-chip", dataset: { unit: position }, title: `Window ${position + 1}: ${span(w.start, w.end)}`,
    "aria-current": position === view.unit ? "true" : null, onclick: () => act.goToUnit(position, { seek: true }),
  }, String(position + 1)));
  chips.push(h("button", {
    type: "button", class: "ws-chip ws-chip-wide", dataset: { unit: N }, "aria-current": view.unit >= N ? "true" : null,
    onclick: () => act.goToUnit(N),
  }, "Segmentation"));
  return h("nav", { class: "ws-units", "aria-label": "Windows" }, chips);
}

export function renderWindowPass() {
  return [
    // The locked overview and the window chips share a line; the progress count sits between
    // the buttons at the bottom: the unit itself gets the height.
    h("div", { class: "ws-passbar" }, lockedOverview(), unitNav()),
    view.unit >= N ? renderSegmentation() : renderWindow(view.unit),
    h("ul", { class: "ws-checks", id: "checks", "aria-live": "polite" }),
    h("div", { class: "ws-actions" },
      h("button", { type: "button", id: "prev", onclick: () => act.goToUnit(view.unit - 1, { seek: true }), disabled: view.unit === 0 }, "‹ Previous ", kbd("P")),
      h("button", { type: "button", id: "next", onclick: () => act.goToUnit(view.unit + 1, { seek: true }), disabled: view.unit >= N }, "Next ", kbd("N"), " ›"),
      h("span", { class: "ws-grow muted ws-summary", id: "progress-summary" }),
      h("button", { type: "button", class: "primary", id: "submit", onclick: act.submitAll }, "Submit to QC ", kbd("Ctrl", "Enter"))),
  ];
}

export function renderWindow(position) {
  const o = originals[position];
  const w = S.draft.windows[position];
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
          onInput: (value) => { S.draft.windows[position].scene = value; edited(key); },
        }),
        textField({
          id: "window-shot", label: "Corrected shot", original: o.shot, value: w.shot, rows: 2,
          onInput: (value) => { S.draft.windows[position].shot = value; edited(key); },
        }),
        h("div", { class: "ws-times" },
          h("div", { class: "ws-time-group" },
            numberField({ id: "window-start", label: "Start (s)", value: w.start, onInput: (value) => { S.draft.windows[position].start = value; edited(key); refreshTimeline(); } }),
            h("button", { type: "button", onclick: () => act.setFromPlayhead("start") }, "From playhead ", kbd("S"))),
          h("div", { class: "ws-time-group" },
            numberField({ id: "window-end", label: "End (s)", value: w.end, onInput: (value) => { S.draft.windows[position].end = value; edited(key); refreshTimeline(); } }),
            h("button", { type: "button", onclick: () => act.setFromPlayhead("end") }, "From playhead ", kbd("E"))),
          h("span", { class: "muted ws-original-times", text: `original ${span(o.start, o.end)}` })),
        modePicker(key))
      : null);
}

export function renderSegmentation() {
  const s = S.draft.segmentation;
  return h("article", { class: "ws-unit", id: "unit", dataset: { unit: N } },
    unitHead("Segmentation", "judged once for the whole caption", closedUnit("segmentation") ? null : verdictButtons("segmentation", s.verdict)),
    s.verdict === "reject" ? null : h("p", { class: "muted ws-intro" },
      "Are the timestamps where the events are? Reject when windows merge distinct events, miss a shot change, sit on a fixed grid rather than on content, or are timestamped away from the event."),
    s.verdict === "reject" ? null : h("ol", { class: "ws-spans" }, S.draft.windows.map((w, i) => h("li", { class: "ws-num", text: `${i + 1}: ${span(w.start, w.end)}` }))),
    closedUnit("segmentation") ? closedUnitSummary(s) : null,
    // Modes first: the corrected windows below may be many, and scroll.
    s.verdict === "reject" && !closedUnit("segmentation") ? h("div", { class: "ws-editor" }, modePicker("segmentation"), boundaryEditor()) : null);
}

export function boundaryEditor() {
  const rows = S.draft.segmentation.windows.map((w, r) => {
    const edit = (field) => (value) => { S.draft.segmentation.windows[r][field] = value; edited("segmentation"); };
    // Multi-line: a scene or shot is a sentence or two, and all of it should be readable.
    const text = (field, label) => {
      const input = h("textarea", { id: `seg-${field}-${r}`, rows: 2, value: w[field], placeholder: label, "aria-label": `${label} of corrected window ${r + 1}` });
      input.addEventListener("input", () => {
        autosize(input, 4);
        edit(field)(input.value);
      });
      return input;
    };
    const row = h("li", { class: "ws-row", dataset: { row: r } },
      h("span", { class: "ws-row-n", text: String(r + 1) }),
      numberField({ id: `seg-start-${r}`, label: "Start", value: w.start, onInput: edit("start") }),
      numberField({ id: `seg-end-${r}`, label: "End", value: w.end, onInput: edit("end") }),
      h("span", { class: "ws-row-actions" },
        h("button", { type: "button", onclick: () => act.mergeRow(r), disabled: r === S.draft.segmentation.windows.length - 1, title: "Merge with the next window (M)" }, "Merge with next"),
        h("button", { type: "button", onclick: () => { act.selectRow(r); act.splitAtPlayhead(); }, title: "Split at the playhead (X)" }, "Split at playhead")),
      h("span", { class: "ws-row-texts" }, text("scene", "Scene"), text("shot", "Shot")));
    row.addEventListener("focusin", () => act.selectRow(r));
    row.addEventListener("click", (event) => {
      if (event.target === row || event.target.classList.contains("ws-row-n")) { act.selectRow(r); player.seek(w.start); }
    });
    return row;
  });
  return h("div", { class: "ws-boundaries" },
    h("p", { class: "ws-label", title: "Select a window by clicking it or playing into it. Boundaries dragged on the timeline snap to shot changes; hold Shift not to." },
      "Corrected windows: ", kbd("M"), " merge with the next · ", kbd("X"), " split at the playhead · ",
      kbd("S"), " / ", kbd("E"), " start / end from the playhead · or drag the boundaries on the timeline (Shift: no snapping)."),
    h("ol", { class: "ws-rows", id: "seg-rows" }, rows),
    h("button", { type: "button", class: "link", onclick: act.resetBoundaries }, "Start again from the window pass's windows"));
}

export function renderDone() {
  const state = S.server.state;
  const judged = S.draft.windows.filter((w) => w.verdict === "reject").length;
  const title = { approved: "Approved", in_review: "In QC review", submitted: "Submitted to QC", returned: "Returned by QC", assigned: "Not started" }[state] || state;
  const next = h("button", { type: "button", class: "primary", id: "start-next", onclick: act.startNext }, "Start next ", kbd("Enter"));
  queueMicrotask(() => next.focus());
  return [
    h("div", { class: "ws-done" },
      h("h2", { text: title }),
      h("p", { text: state === "submitted" ? "Thank you. A QC reviewer checks it next; if they return it, it comes back to the top of your queue with their comment." : "Nothing to do here for now." }),
      h("p", { class: "muted", text: `Overview ${verdictText(S.draft.overview.verdict).toLowerCase()} · ${judged} of ${N} windows rejected · segmentation ${verdictText(S.draft.segmentation.verdict).toLowerCase()}` }),
      h("p", { class: "ws-actions" }, next, h("a", { href: `/studies/${data.study}/queue/` }, "Back to your queue"))),
  ];
}

// The workspace's building blocks: text and time fields with their problems and redlines,
// verdict buttons, the failure-mode picker, and the list of what is still missing.

import { liveMeasurer } from "./live-edits.js";
import { renderRedline } from "./redline.js";
import { fill, h, kbd } from "./workspace-dom.js";
import {
  $, act, CUT, EDITABLE, data, LIMIT, MODES, N, S, currentKey, isWindowKey, modeName, num, overviewProblems, panel, pass, positionOf, saveStatus, say, segmentationJudged, taxonomy, timelineFieldProblems, unitLabel, unitOf, unitProblems, unitTimeProblem, view, windowFieldProblems, windowJudged,
} from "./workspace-state.js";

export function showStatus(state, { count, detail }) {
  if (S.server.state !== EDITABLE) state = "readonly";
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
  saveStatus.title = text; // in full, where the header cuts it short
  markUnsaved();
}

// A chip carries a dot while its unit has changes the server has not acknowledged.
export function markUnsaved() {
  for (const chip of panel.querySelectorAll(".ws-chip")) {
    const unit = Number(chip.dataset.unit);
    chip.classList.toggle("ws-unsaved", S.sync.has(unit >= N ? "segmentation" : `w:${unit}`));
  }
}

// ------------------------------------------------------------------ edit size and redline

export let sizeTargets = [];

export function resetSizes() {
  sizeTargets = [];
}

// Computed here, on every keystroke (edits.js gives the server's numbers, offline too); what is
// stored is scored again by the S.server.
export function scheduleSizes() {
  updateSizes();
}

export function updateSizes() {
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

// A text area as tall as its text (a three-line scene shows three lines), up to `most` lines;
// beyond that it scrolls. Sized once it is on the page and again as the person types.
export function autosize(area, most = 8, least = Number(area.dataset.least) || 1) {
  const style = getComputedStyle(area);
  const line = parseFloat(style.lineHeight) || 20;
  const borders = parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
  const frame = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom) + borders;
  area.rows = 1; // measured from one line up, so that a one-line text takes one line
  area.style.height = "auto";
  const wanted = Math.max(area.scrollHeight + borders, line * least + frame);
  area.style.height = `${Math.min(wanted, line * most + frame)}px`;
}

export function textField({ id, label, original, value, rows, onInput }) {
  const area = h("textarea", { id, rows, value, spellcheck: "true", dataset: { least: rows > 2 ? 2 : 1 } });
  area.addEventListener("input", () => {
    autosize(area);
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
export function numberField({ id, label, value, onInput }) {
  // Text, not type=number: Chromium's number field drops a decimal comma ("0,5" became 5 s);
  // readSeconds takes "0,5" as 0.5 and says so at the field when a value is not one number.
  const input = h("input", {
    id, type: "text", inputmode: "decimal", autocomplete: "off", spellcheck: "false",
    value: Number.isFinite(value) ? String(value) : "",
    class: "ws-time-input", "aria-describedby": `${id}-problem`, title: `seconds, 0 to ${LIMIT.toFixed(2)} (a decimal comma is fine)`,
  });
  input.addEventListener("input", () => {
    onInput(num(input.value)); // redraws the timeline too
    refreshChecks();
  });
  return h("label", { class: "ws-time", htmlFor: id }, h("span", { text: label }), input,
    h("span", { class: "ws-field-problem", id: `${id}-problem`, role: "alert", hidden: true }));
}

export function showFieldProblem(id, problem) {
  const input = $(id);
  const message = $(`${id}-problem`);
  if (!input || !message) return;
  input.toggleAttribute("aria-invalid", Boolean(problem));
  message.textContent = problem;
  message.hidden = !problem;
}

// Every time field on screen says what is wrong with it, at the field.
export function refreshTimeFields() {
  const key = currentKey();
  if (key === "segmentation" && S.draft.segmentation.verdict === "reject") {
    timelineFieldProblems(S.draft.segmentation.windows).forEach((problems, r) => {
      showFieldProblem(`seg-start-${r}`, problems.start);
      showFieldProblem(`seg-end-${r}`, problems.end);
    });
  } else if (key && isWindowKey(key)) {
    const problems = windowFieldProblems(S.draft, positionOf(key));
    showFieldProblem("window-start", problems.start);
    showFieldProblem("window-end", problems.end);
  }
}

// Accepting a unit or leaving it waits until its times make sense; says why and
// puts the person on the field to fix. True when the way is clear.
export function timesAllowLeaving(what) {
  const key = currentKey();
  const problem = key ? unitTimeProblem(S.draft, key) : "";
  if (!problem) return true;
  say(`${unitLabel(key)}: ${problem} Fix it before you ${what}.`, "error");
  refreshTimeFields();
  panel.querySelector(".ws-time-input[aria-invalid]")?.focus();
  return false;
}

export function verdictButtons(key, verdict) {
  const rejectLabel = key === "segmentation" ? "Reject and correct the boundaries" : "Reject and edit";
  return h("div", { class: "ws-verdict", role: "group", "aria-label": "Verdict" },
    h("button", {
      type: "button", id: "accept", class: `ws-accept${verdict === "accept" ? " chosen" : ""}`,
      "aria-pressed": String(verdict === "accept"), onclick: () => act.accept(),
    }, verdict === "accept" ? "Accepted " : "Accept ", kbd("A")),
    h("button", {
      type: "button", id: "reject", class: `ws-reject${verdict === "reject" ? " chosen" : ""}`,
      "aria-pressed": String(verdict === "reject"), onclick: () => act.reject(),
    }, verdict === "reject" ? "Rejected " : `${rejectLabel} `, kbd("R")));
}

// A unit's title with its verdict beside it: one line, so the decision stays in view.
export function unitHead(title, note, verdict) {
  return h("div", { class: "ws-unit-head" }, h("h2", null, title, " ", note ? h("span", { class: "muted ws-num", text: note }) : null), verdict);
}

export function modePicker(key) {
  const unit = unitOf(S.draft, key);
  const box = h("fieldset", { class: "ws-modes", id: "modes" },
    h("legend", null, "Failure modes ",
      h("span", { class: "muted", text: "at least one · keys 1–6 · definitions on hover, focus or " }), kbd("?")));
  MODES.forEach((mode, i) => {
    const allowed = key === "segmentation" || mode.level !== "caption";
    const input = h("input", {
      type: "checkbox", id: `mode-${mode.key}`, value: mode.key, checked: unit.modes.includes(mode.key), disabled: !allowed,
    });
    input.addEventListener("change", () => act.setMode(key, mode.key, input.checked));
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

export function refreshModes() {
  const key = currentKey();
  if (!key) return;
  const unit = unitOf(S.draft, key);
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

export function refreshChecks() {
  refreshTimeFields();
  const list = $("checks");
  if (!list) return;
  let problems;
  let summary = "";
  if (pass() === "overview") {
    problems = overviewProblems(S.draft.overview);
  } else {
    problems = unitProblems(view.unit);
    const judged = S.draft.windows.filter((w, position) => windowJudged(S.draft, position)).length;
    const segmentation = segmentationJudged(S.draft) ? `segmentation ${S.draft.segmentation.verdict}ed` : "segmentation not judged yet";
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
    const verdict = unit >= N ? S.draft.segmentation.verdict : S.draft.windows[unit].verdict;
    chip.dataset.verdict = verdict || "none";
    chip.classList.toggle("ws-incomplete", Boolean(verdict) && unitProblems(unit).length > 0);
  }
  markUnsaved();
}

// When this annotation was saved elsewhere: a three-way merge with what only one side changed,
// and a dialog for the parts both changed.

import { wordDiff } from "./edits.js";
import { mergeUnit } from "./merge.js";
import { renderRedline } from "./redline.js";
import { fill, h, same, span } from "./workspace-dom.js";
import {
  $, EDITABLE, MODES, S, caption, conflictDialog, fromPass, modeName, originals, pickServer, say, setUnit, stash, unitLabel, unitOf, verdictText,
} from "./workspace-state.js";
import { render } from "./workspace-render.js";

// ------------------------------------------------------------------ conflicts

export let pending = null;

export function describe(key, unit) {
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

// `base`: the pass this tab last had from the S.server, or null when unknown (edits restored from this device).
export function conflict(current, detail, base) {
  const theirs = fromPass(current.annotator_pass);
  S.activity.absorb(current.telemetry);
  if (current.state !== EDITABLE) {
    S.server = pickServer(current);
    S.draft = theirs;
    S.sync.dropAll();
    S.sync.block();
    S.sync.clearLocal();
    render();
    say(`This annotation is now ${current.state.replace("_", " ")} (changed in another tab or by QC); it cannot be edited here.`, "error", { sticky: true });
    return;
  }
  // Three-way: against `base`, what only one side changed is taken from it, and what both
  // changed is merged (merge.js); only true overlaps are left for the person to pick.
  const rows = [];
  const merged = new Map();
  const both = [];
  // Units the server already has exactly as this tab does: this person's own edits, saved by
  // a request whose answer this tab never read (the save sent as the page was left, say).
  const landed = new Set();
  for (const key of S.sync.keys()) {
    const mine = unitOf(S.draft, key);
    const other = unitOf(theirs, key);
    if (same(mine, other)) {
      S.sync.drop(key);
      landed.add(key);
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
  const elsewhere = base
    ? allKeys().filter((key) => !S.sync.has(key) && !landed.has(key) && !same(unitOf(base, key), unitOf(theirs, key)))
    : [];
  pending = { current, theirs, merged, told: [...both, ...elsewhere] };
  if (!rows.length) {
    keepMine({ quiet: true });
    return;
  }
  showConflict(rows, detail);
}

// A unit as both sides started from it. An overview not yet rejected is edited from the original
// text (that is what the editor starts from), so that is the text both sides' edits are against.
export function mergeBase(base, key) {
  const unit = unitOf(base, key);
  return key === "overview" && unit.verdict !== "reject" ? { ...unit, text: caption.overview } : unit;
}

export const allKeys = () => ["overview", ...originals.map((w, position) => `w:${position}`), "segmentation"];

export function showConflict(rows, detail) {
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

export function adopt(current) {
  S.server = pickServer(current);
  S.sync.setVersion(current.version);
}

// Save the merge: theirs, with what was merged and, per conflicting unit, the version picked.
export function keepMine({ quiet = false } = {}) {
  if (!pending) return;
  const { current, theirs, merged: mergedUnits = new Map(), told = [] } = pending;
  pending = null;
  const merged = structuredClone(theirs);
  const picked = (key) => conflictDialog.querySelector(`input[name="pick-${key}"]:checked`)?.value || "mine";
  for (const key of S.sync.keys()) {
    if (key === "overview" && current.overview_locked) S.sync.drop(key);
    else if (mergedUnits.has(key)) setUnit(merged, key, mergedUnits.get(key));
    else if (!conflictDialog.hidden && picked(key) === "theirs") {
      S.sync.drop(key);
      stash.delete(key);
    } else setUnit(merged, key, unitOf(S.draft, key));
  }
  if (told.length) say(`Merged with changes saved elsewhere: ${told.map(unitLabel).join(", ")}. Your own changes are kept.`, "ok");
  const changedView = !same(merged, S.draft) || current.overview_locked !== S.server.overview_locked;
  S.draft = merged;
  adopt(current);
  conflictDialog.hidden = true;
  S.sync.unblock();
  if (changedView || !quiet) render();
  S.sync.save();
}

// Theirs for every part listed in the dialog; the merged parts stay merged.
export function takeTheirs() {
  for (const radio of conflictDialog.querySelectorAll("input[type=radio][value=theirs]")) radio.checked = true;
  keepMine();
}

$("keep-mine").addEventListener("click", () => keepMine());
$("take-theirs").addEventListener("click", takeTheirs);

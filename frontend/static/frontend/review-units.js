// Pieces of the review page for one unit (the overview, a window, the segmentation):
// redlines between two versions with their edit size, mode tags, and the QC editors.
// Caption text is untrusted: it is only ever set with textContent or input values.

import { fetchEditSize, renderRedline } from "./redline.js";
import { readSeconds, timeFieldProblems } from "./times.js";

export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export function span(window) {
  return `${Number(window.start).toFixed(2)}–${Number(window.end).toFixed(2)} s`;
}

export function sameList(a, b) {
  return JSON.stringify([...(a || [])].sort()) === JSON.stringify([...(b || [])].sort());
}

// fetchEditSize aborts the request before it, so calls are chained: none is cut short.
let chain = Promise.resolve();

export function editSize(original, corrected, cut) {
  if (original === corrected) {
    const diff = original ? [{ op: "equal", text: original }] : [];
    return Promise.resolve({ words_changed: 0, char_similarity: 1, near_total: false, diff });
  }
  const next = chain.then(() => fetchEditSize(original, corrected, cut));
  chain = next.catch(() => {});
  return next;
}

// Which two texts a size compares, from a redline's label: "Scene, annotator → QC" -> "annotator → QC".
export function measuredTexts(label) {
  const parts = String(label || "").split(", ");
  return parts[parts.length - 1].toLowerCase().replace("qc", "QC");
}

// `measures` names the two texts compared ("original → annotator"), so that two sizes of one
// unit (the annotator's edit, QC's amendment of it) say which is which.
export function showSize(node, data, measures = "") {
  const words = data.words_changed;
  const between = measures ? `, ${measures}` : "";
  node.replaceChildren(
    element("span", "words", `${words} word${words === 1 ? "" : "s"} changed`),
    document.createTextNode(` · character similarity${between}: ${data.char_similarity.toFixed(2)} `),
  );
  if (data.near_total) node.appendChild(element("span", "badge warn", "near-total repair"));
}

// A redline of original -> corrected with its size under it; `.ready` settles when drawn.
export function redline(label, original, corrected, cut) {
  const box = element("div", "redline-block");
  if (label) box.appendChild(element("span", "redline-label", label));
  const text = element("p", "redline");
  text.textContent = corrected;
  const size = element("p", "edit-size muted", "measuring…");
  box.append(text, size);
  box.ready = editSize(original, corrected, cut)
    .then((data) => { renderRedline(text, data.diff); showSize(size, data, measuredTexts(label)); })
    .catch(() => { size.textContent = "edit size unavailable"; });
  return box;
}

export function verdictBadge(verdict, who) {
  const word = verdict === "accept" ? "accepted" : verdict === "reject" ? "rejected" : "undecided";
  const badge = element("span", `badge verdict verdict-${verdict || "none"}`, who ? `${who}: ${word}` : word);
  return badge;
}

export function modeTags(keys, taxonomy) {
  const box = element("span", "mode-tags");
  for (const key of keys || []) {
    const mode = taxonomy.find((m) => m.key === key);
    const tag = element("span", "mode-tag", mode ? mode.name : key);
    tag.dataset.mode = key;
    if (mode) tag.title = `${mode.definition} ${mode.decision_test}`;
    box.appendChild(tag);
  }
  return box;
}

// --------------------------------------------------------------------------- editors

let unique = 0;

export function verdictChoice(label, current, onChange) {
  const box = element("fieldset", "verdict-choice");
  box.appendChild(element("legend", null, label));
  const name = `verdict-${++unique}`;
  for (const [value, text] of [["accept", "Accept"], ["reject", "Reject"]]) {
    const option = element("label", "inline");
    const radio = element("input");
    radio.type = "radio";
    radio.name = name;
    radio.value = value;
    radio.checked = current === value;
    radio.addEventListener("change", () => onChange(value));
    option.append(radio, document.createTextNode(text));
    box.appendChild(option);
  }
  box.read = () => box.querySelector("input:checked")?.value || "";
  return box;
}

export function modeChoice(label, modes, selected) {
  const box = element("fieldset", "mode-choice");
  box.appendChild(element("legend", null, label));
  for (const mode of modes) {
    const option = element("label", "inline");
    option.title = mode.definition;
    const check = element("input");
    check.type = "checkbox";
    check.value = mode.key;
    check.checked = (selected || []).includes(mode.key);
    option.append(check, document.createTextNode(mode.name));
    box.appendChild(option);
  }
  box.read = () => [...box.querySelectorAll("input:checked")].map((input) => input.value);
  return box;
}

export function textField(label, value, rows = 3) {
  const wrap = element("label", "field");
  wrap.appendChild(element("span", null, label));
  const input = element("textarea");
  input.rows = rows;
  input.value = value;
  wrap.appendChild(input);
  wrap.input = input;
  return wrap;
}

// A time in seconds; `read()` is NaN when the field is empty (never a silent 0), and
// `show(problem)` writes what is wrong with it right under it. Text, not type=number:
// Chromium's number field drops a decimal comma ("0,5" became 5 s) before readSeconds sees it.
export function numberField(label, value) {
  const wrap = element("label", "field number");
  wrap.appendChild(element("span", null, label));
  const input = element("input", "time-input");
  input.type = "text";
  input.inputMode = "decimal";
  input.autocomplete = "off";
  input.spellcheck = false;
  input.title = "seconds (a decimal comma is fine)";
  input.value = Number.isFinite(value) ? String(value) : "";
  const problem = element("span", "field-problem");
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  wrap.append(input, problem);
  wrap.input = input;
  wrap.read = () => readSeconds(input.value);
  wrap.show = (message) => {
    input.toggleAttribute("aria-invalid", Boolean(message));
    problem.textContent = message;
    problem.hidden = !message;
  };
  return wrap;
}

// Check the time fields of an editor as the reviewer types; `form.timeProblem()` is the first
// problem as {message, input} (or null) and puts every message at its field.
export function watchTimes(form, check) {
  form.timeProblem = () => {
    let first = null;
    for (const [field, message] of check()) {
      field.show(message);
      if (message && !first) first = { message, input: field.input };
    }
    return first;
  };
  form.addEventListener("input", (event) => {
    if (event.target.classList.contains("time-input")) form.timeProblem();
  });
}

// A redline of the annotator's text -> what QC types, refreshed as they type.
function liveRedline(label, source, input, cut) {
  const box = element("div", "redline-block live");
  box.appendChild(element("span", "redline-label", label));
  const text = element("p", "redline");
  const size = element("p", "edit-size muted");
  box.append(text, size);
  let timer = null;
  const refresh = () => {
    editSize(source, input.value, cut)
      .then((data) => { renderRedline(text, data.diff); showSize(size, data, measuredTexts(label)); })
      .catch(() => {});
  };
  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 250); });
  refresh();
  return box;
}

export function unitModes(taxonomy) {
  return taxonomy.filter((mode) => mode.level === "unit");
}

export function overviewEditor({ original, mine, taxonomy, cut }) {
  const form = element("fieldset", "amend-editor");
  form.appendChild(element("legend", null, "QC version of the overview"));
  const source = mine.verdict === "reject" ? mine.text : original;
  const text = textField("QC overview text", source, 5);
  const modes = modeChoice("Failure modes (QC)", unitModes(taxonomy), mine.modes);
  const fields = element("div", "amend-fields");
  fields.append(text, modes, liveRedline("Annotator → QC", source, text.input, cut));
  const sync = (verdict) => { fields.hidden = verdict !== "reject"; };
  const verdict = verdictChoice("Overview verdict (QC)", mine.verdict, sync);
  form.append(verdict, fields);
  sync(mine.verdict);
  form.change = () => {
    const now = { verdict: verdict.read(), text: text.input.value, modes: modes.read() };
    if (now.verdict === "accept") return mine.verdict === "accept" ? null : { verdict: "accept" };
    const same = mine.verdict === "reject" && now.text === mine.text && sameList(now.modes, mine.modes);
    return same ? null : now;
  };
  return form;
}

// `neighbours()` is {previous, next}: the windows either side ({number, start, end}, or null)
// as they stand in the QC version, so that a time overlapping one of them names it.
export function windowEditor({ window, mine, taxonomy, cut, duration, neighbours = () => ({}) }) {
  const number = window.index + 1;
  const form = element("fieldset", "amend-editor");
  form.appendChild(element("legend", null, `QC version of window ${number}`));
  const scene = textField(`Window ${number} scene (QC)`, mine.scene, 2);
  const shot = textField(`Window ${number} shot (QC)`, mine.shot, 2);
  const start = numberField(`Window ${number} start (s)`, mine.start);
  const end = numberField(`Window ${number} end (s)`, mine.end);
  const times = element("div", "field-row");
  times.append(start, end);
  const modes = modeChoice(`Failure modes of window ${number} (QC)`, unitModes(taxonomy), mine.modes);
  const fields = element("div", "amend-fields");
  fields.append(
    scene, shot, times, modes,
    liveRedline("Scene, annotator → QC", mine.scene, scene.input, cut),
    liveRedline("Shot, annotator → QC", mine.shot, shot.input, cut),
  );
  const sync = (verdict) => { fields.hidden = verdict !== "reject"; };
  const verdict = verdictChoice(`Window ${number} verdict (QC)`, mine.verdict, sync);
  form.append(verdict, fields);
  sync(mine.verdict);
  form.change = () => {
    const now = {
      index: window.index, verdict: verdict.read(), scene: scene.input.value, shot: shot.input.value,
      start: start.read(), end: end.read(), modes: modes.read(),
    };
    if (now.verdict === "accept") return mine.verdict === "accept" ? null : { index: window.index, verdict: "accept" };
    const same = mine.verdict === "reject" && now.scene === mine.scene && now.shot === mine.shot
      && now.start === mine.start && now.end === mine.end && sameList(now.modes, mine.modes);
    return same ? null : now;
  };
  // The window's times in the QC version: what is typed once rejected, else the annotator's.
  form.times = () => (verdict.read() === "reject" ? { start: start.read(), end: end.read() } : { start: mine.start, end: mine.end });
  watchTimes(form, () => {
    if (verdict.read() !== "reject") return [[start, ""], [end, ""]];
    const { previous = null, next = null } = neighbours();
    const problems = timeFieldProblems(start.read(), end.read(), { duration, previous, next });
    return [[start, problems.start && `Window ${number}: ${problems.start}`],
      [end, problems.end && `Window ${number}: ${problems.end}`]];
  });
  return form;
}

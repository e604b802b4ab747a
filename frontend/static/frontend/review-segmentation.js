// The QC editor of a caption's segmentation: the corrected windows as number rows and, once
// the segmentation is rejected, on the corrected timeline under the video (timeline.js), as in
// the annotator's workspace: boundaries dragged in whole frames (snapping to shot changes
// unless Shift is held), a shared boundary moving for both windows, edges moved from the
// keyboard, split at the playhead, merge with the next. Rows and timeline follow each other.
// Caption text is untrusted: it is only ever set with textContent or input values.

import { element, modeChoice, numberField, sameList, textField, verdictChoice, watchTimes } from "./review-units.js";
import { seconds } from "./workspace-dom.js";
import { timelineFieldProblems } from "./times.js";

const NEAR = 0.01; // a split this close to a window's edge would leave an empty window

function boundaryRow(window, { onRemove, onMerge }) {
  const row = element("li", "boundary-row");
  const fields = {
    start: numberField("start (s)", window.start),
    end: numberField("end (s)", window.end),
    scene: textField("scene", window.scene || "", 1),
    shot: textField("shot", window.shot || "", 1),
  };
  const merge = element("button", "link merge", "merge with next");
  merge.type = "button";
  merge.addEventListener("click", () => onMerge(row));
  const remove = element("button", "link", "remove");
  remove.type = "button";
  remove.addEventListener("click", () => onRemove(row));
  row.append(fields.start, fields.end, fields.scene, fields.shot, merge, remove);
  row.fields = fields;
  row.merge = merge;
  row.read = () => ({
    start: fields.start.read(), end: fields.end.read(),
    scene: fields.scene.input.value, shot: fields.shot.input.value,
  });
  return row;
}

function joinText(a, b) {
  return a.trim() === b.trim() ? a : [a, b].filter((t) => t.trim()).join(" ");
}

// `timeline` draws on the page's corrected timeline: `show(windows, {editable, linked})`, or
// `show(null)` to give it back to the page; `onRetime(listener)` hears the windows it moved;
// `playhead()` is the video's time (seconds).
export function segmentationEditor({ original, mine, taxonomy, duration, timeline }) {
  const form = element("fieldset", "amend-editor segmentation-editor");
  form.appendChild(element("legend", null, "QC version of the segmentation"));
  const modes = modeChoice("Failure modes of the segmentation (QC)", taxonomy, mine.modes);
  const list = element("ol", "boundary-rows");
  const rows = () => [...list.children];
  const read = () => rows().map((row) => row.read());
  const say = element("p", "segmentation-said muted");
  say.setAttribute("role", "status");

  const redraw = () => {
    rows().forEach((row, i) => { row.merge.disabled = i === rows().length - 1; });
    form.timeProblem();
    if (verdict.read() !== "reject") {
      timeline.show(null);
      return;
    }
    const windows = read();
    const drawable = windows.every((w) => Number.isFinite(w.start) && Number.isFinite(w.end) && w.end > w.start);
    const problems = timelineFieldProblems(windows, { duration });
    const clean = problems.every((p) => !p.start && !p.end);
    // Boundaries are dragged only while the rows make sense; a row being typed is drawn as typed.
    timeline.show(drawable ? windows : [], { editable: () => clean, linked: true });
  };
  const place = (windows) => {
    list.replaceChildren(...windows.map((window) => boundaryRow(window, { onRemove, onMerge })));
    redraw();
  };
  const onRemove = (row) => { row.remove(); redraw(); };
  const onMerge = (row) => {
    const r = rows().indexOf(row);
    const windows = read();
    if (r < 0 || r >= windows.length - 1) return;
    const [a, b] = [windows[r], windows[r + 1]];
    windows.splice(r, 2, { start: a.start, end: b.end, scene: joinText(a.scene, b.scene), shot: joinText(a.shot, b.shot) });
    place(windows);
    say.textContent = `Merged corrected windows ${r + 1} and ${r + 2}.`;
  };

  const add = element("button", null, "Add a window");
  add.type = "button";
  add.addEventListener("click", () => {
    const windows = read();
    const last = windows.length ? windows[windows.length - 1].end : 0;
    windows.push({ start: last, end: Math.min(last + 1, duration), scene: "", shot: "" });
    place(windows);
  });
  const split = element("button", "split", "Split at playhead");
  split.type = "button";
  split.title = "Split the corrected window under the playhead in two, at the playhead";
  split.addEventListener("click", () => {
    const t = Math.round(timeline.playhead() * 1000) / 1000;
    const windows = read();
    const r = windows.findIndex((w) => t > w.start + NEAR && t < w.end - NEAR);
    if (r < 0) {
      say.textContent = "Put the playhead inside a corrected window to split it there.";
      return;
    }
    const w = windows[r];
    windows.splice(r, 1, { ...w, end: t }, { ...w, start: t });
    place(windows);
    say.textContent = `Split corrected window ${r + 1} at ${seconds(t)}.`;
  });

  const tools = element("div", "boundary-tools");
  tools.append(add, split);
  const fields = element("div", "amend-fields");
  fields.append(modes, element("span", "redline-label", "Corrected window boundaries"),
    element("p", "muted hint", "Drag the boundaries on the corrected timeline under the video (whole frames; they snap to shot changes unless Shift is held), or Tab to an edge and move it with ← → (a frame) or Shift+← → (a second)."),
    list, tools, say);
  const sync = (value) => { fields.hidden = value !== "reject"; redraw(); };
  const verdict = verdictChoice("Segmentation verdict (QC)", mine.verdict, sync);
  form.append(verdict, fields);

  watchTimes(form, () => {
    const reject = verdict.read() === "reject";
    const problems = reject ? timelineFieldProblems(read(), { duration }) : [];
    return rows().flatMap((row, i) => ["start", "end"].map((field) => {
      const message = problems[i]?.[field];
      return [row.fields[field], message ? `Corrected window ${i + 1}: ${message}` : ""];
    }));
  });
  form.addEventListener("input", (event) => { if (event.target.classList.contains("time-input")) redraw(); });

  // The timeline moved windows: their rows follow.
  timeline.onRetime((changes, { done }) => {
    if (!form.isConnected || verdict.read() !== "reject") return;
    for (const { index, start, end } of changes) {
      const row = rows()[index];
      if (!row) continue;
      row.fields.start.input.value = String(start);
      row.fields.end.input.value = String(end);
    }
    form.timeProblem();
    if (done) say.textContent = changes.map(({ index, start, end }) => `Corrected window ${index + 1}: ${seconds(start)}–${seconds(end)}.`).join(" ");
  });

  form.change = () => {
    const now = { verdict: verdict.read(), modes: modes.read(), windows: read() };
    if (now.verdict === "accept") return mine.verdict === "accept" ? null : { verdict: "accept" };
    const same = mine.verdict === "reject" && sameList(now.modes, mine.modes)
      && JSON.stringify(now.windows) === JSON.stringify(mine.windows.map((w) => ({
        start: w.start, end: w.end, scene: w.scene || "", shot: w.shot || "",
      })));
    return same ? null : now;
  };
  // Drawn once the form is on the page (the timeline is the page's).
  form.redraw = redraw;

  const starting = mine.verdict === "reject" && mine.windows.length ? mine.windows : original;
  list.replaceChildren(...starting.map((window) => boundaryRow(window, { onRemove, onMerge })));
  fields.hidden = mine.verdict !== "reject";
  return form;
}

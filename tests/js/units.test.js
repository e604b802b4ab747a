import assert from "node:assert/strict";
import { test } from "node:test";

import { unitModel } from "../../frontend/static/frontend/workspace-units.js";

const data = {
  clip: { duration: 6 },
  caption: {
    overview: "A test card with a counter.",
    windows: [
      { index: 0, start: 0, end: 2, scene: "Bars.", shot: "Static." },
      { index: 1, start: 2, end: 4, scene: "Counter.", shot: "Static." },
      { index: 2, start: 4, end: 6, scene: "Five.", shot: "Static." },
    ],
  },
  taxonomy: {
    modes: [
      { key: "factual", name: "Factual error", level: "unit" },
      { key: "omission", name: "Important omission", level: "unit" },
      { key: "segmentation", name: "Segmentation", level: "caption" },
    ],
  },
};
const model = unitModel(data);

function judgedDraft() {
  const draft = model.fromPass({
    overview: { verdict: "accept" },
    windows: [0, 1, 2].map((index) => ({ index, verdict: "accept" })),
    segmentation: { verdict: "accept" },
  });
  return draft;
}

test("a pass from the server is normalised: missing windows start from the original", () => {
  const draft = model.fromPass({ windows: [{ index: 1, verdict: "reject", end: 3.5, modes: ["omission", "factual", "x"] }] });
  assert.equal(draft.windows[0].verdict, "");
  assert.deepEqual(draft.windows[1], {
    index: 1, verdict: "reject", scene: "Counter.", shot: "Static.", start: 2, end: 3.5, modes: ["factual", "omission"],
  });
});

test("a rejected window with its end before its start is invalid and blocks leaving it", () => {
  const draft = judgedDraft();
  draft.windows[0] = { ...draft.windows[0], verdict: "reject", start: 3, end: 2, modes: ["omission"] };
  assert.equal(model.unitValid("w:0", draft.windows[0]), false);
  assert.equal(model.unitTimeProblem(draft, "w:0"), "The end must come after the start (3.00 s).");
  assert.deepEqual(model.windowProblems(draft, 0), ["The end must come after the start (3.00 s)."]);
  assert.equal(model.firstOpenUnit(draft), 0);
});

test("an empty time field is a problem, not a window starting at 0", () => {
  const draft = judgedDraft();
  draft.windows[1] = { ...draft.windows[1], verdict: "reject", start: model.num(""), modes: ["omission"] };
  assert.equal(model.unitTimeProblem(draft, "w:1"), "Type the start in seconds.");
});

test("overlapping corrected windows name the window and block the segmentation", () => {
  const draft = judgedDraft();
  draft.segmentation = {
    verdict: "reject", modes: ["segmentation"],
    windows: [{ start: 0, end: 3, scene: "", shot: "" }, { start: 2.5, end: 6, scene: "", shot: "" }],
  };
  assert.equal(model.unitValid("segmentation", draft.segmentation), false);
  assert.equal(model.unitTimeProblem(draft, "segmentation"),
    "Corrected window 2: The start is before the previous window ends (3.00 s).");
  assert.equal(model.firstOpenUnit(draft), 3);
});

test("an accepted unit has no time problem and a complete pass has no open unit", () => {
  const draft = judgedDraft();
  assert.equal(model.unitTimeProblem(draft, "w:2"), "");
  assert.equal(model.firstOpenUnit(draft), -1);
});

test("a rejected window needs a change and a mode", () => {
  const draft = judgedDraft();
  draft.windows[2] = { ...draft.windows[2], verdict: "reject" };
  assert.deepEqual(model.windowProblems(draft, 2), ["Correct the scene, the shot or the timestamps.", "Tag at least one failure mode."]);
});

test("a rejected overview needs a changed text and a mode", () => {
  assert.deepEqual(model.overviewProblems({ verdict: "reject", text: "A test card with a counter. ", modes: [] }),
    ["Change the text: a rejected overview needs a corrected text.", "Tag at least one failure mode."]);
  assert.deepEqual(model.overviewProblems({ verdict: "", text: "", modes: [] }), ["Accept or reject the overview."]);
});

test("setUnit normalises what it stores", () => {
  const draft = judgedDraft();
  model.setUnit(draft, "overview", { verdict: "reject", text: "New.", modes: ["omission", "omission"] });
  assert.deepEqual(draft.overview, { verdict: "reject", text: "New.", modes: ["omission"] });
  assert.equal(model.isWindowKey("w:2"), true);
  assert.equal(model.isWindowKey("w:3"), false);
});

test("a window counts as judged once it has a verdict and, if rejected, a change or a mode", () => {
  const draft = model.fromPass({});
  assert.equal(model.windowJudged(draft, 0), false);
  draft.windows[0].verdict = "accept";
  assert.equal(model.windowJudged(draft, 0), true);
  draft.windows[1].verdict = "reject";
  assert.equal(model.windowJudged(draft, 1), false, "a bare reject is not a judgement yet");
  draft.windows[1].modes = ["omission"];
  assert.equal(model.windowJudged(draft, 1), true);
  draft.windows[2] = { ...draft.windows[2], verdict: "reject", scene: "Five, then black." };
  assert.equal(model.windowJudged(draft, 2), true);
});

test("the segmentation counts as judged on the same terms", () => {
  const draft = model.fromPass({});
  draft.segmentation = { verdict: "reject", modes: [], windows: draft.windows.map(({ start, end }) => ({ start, end, scene: "", shot: "" })) };
  assert.equal(model.segmentationJudged(draft), false);
  draft.segmentation.windows.pop();
  assert.equal(model.segmentationJudged(draft), true);
});

test("a window retimed over its neighbour is invalid, names the neighbour and blocks leaving it", () => {
  const draft = judgedDraft();
  draft.windows[0] = { ...draft.windows[0], verdict: "reject", end: 3, modes: ["omission"] };
  assert.equal(model.unitValid("w:0", draft.windows[0]), true, "alone, the times are possible");
  assert.equal(model.unitValid("w:0", draft.windows[0], draft), false);
  assert.equal(model.unitTimeProblem(draft, "w:0"), "The end overlaps window 2 (starts 2.00 s).");
  assert.deepEqual(model.windowProblems(draft, 0), ["The end overlaps window 2 (starts 2.00 s)."]);
  // Window 2 moved out of the way: no overlap left; accepting window 2 again would bring it back.
  draft.windows[1] = { ...draft.windows[1], verdict: "reject", start: 3, modes: ["omission"] };
  assert.equal(model.unitTimeProblem(draft, "w:0"), "");
  assert.match(model.acceptProblem(draft, 1), /^Accepting puts it back at 2\.00–4\.00 s\. The start overlaps window 1 \(ends 3\.00 s\)\./);
  assert.equal(model.acceptProblem(draft, 2), "");
});

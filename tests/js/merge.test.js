import assert from "node:assert/strict";
import { test } from "node:test";

import { mergeModes, mergeText, mergeUnit } from "../../frontend/static/frontend/merge.js";

const BASE = "A test card with a counter that counts up.";

test("edits of different stretches of one text are both kept", () => {
  const mine = "A colourful test card with a counter that counts up.";
  const theirs = "A test card with a counter that counts to five.";
  assert.deepEqual(mergeText(BASE, mine, theirs), { text: "A colourful test card with a counter that counts to five.", conflict: false });
  assert.deepEqual(mergeText(BASE, theirs, mine), { text: "A colourful test card with a counter that counts to five.", conflict: false });
});

test("edits of the same stretch are a conflict", () => {
  const result = mergeText(BASE, "A test card with a clock that counts up.", "A test card with a timer that counts up.");
  assert.deepEqual(result, { text: null, conflict: true });
});

test("the same edit on both sides is no conflict", () => {
  const both = "A test card with a clock that counts up.";
  assert.deepEqual(mergeText(BASE, both, both), { text: both, conflict: false });
  const more = "A test card with a clock that counts up. It is loud.";
  assert.deepEqual(mergeText(BASE, both, more), { text: more, conflict: false }, "the shared edit once, and the rest");
});

test("one side unchanged takes the other side", () => {
  assert.equal(mergeText(BASE, BASE, "X.").text, "X.");
  assert.equal(mergeText(BASE, "Y.", BASE).text, "Y.");
});

test("insertions at one place conflict, at different places merge", () => {
  assert.equal(mergeText("a b c", "a X b c", "a Y b c").conflict, true);
  assert.equal(mergeText("a b c", "X a b c", "a b c Y").text, "X a b c Y");
});

test("an insertion touching a replaced word is a conflict", () => {
  assert.equal(mergeText("a b", "a X", "a b c").conflict, true);
  assert.equal(mergeText("a b c", "a X c", "a b c d").text, "a X c d");
});

test("unicode and line breaks survive a merge", () => {
  const base = "Café au lait.\nDeux croissants.";
  assert.equal(mergeText(base, "Café noir.\nDeux croissants.", "Café au lait.\nTrois croissants.").text,
    "Café noir.\nTrois croissants.");
});

test("failure modes merge as sets, in the taxonomy's order", () => {
  const order = ["factual", "omission", "temporal"];
  assert.deepEqual(mergeModes(["factual"], ["factual", "temporal"], ["omission"], order), ["omission", "temporal"]);
});

test("a unit whose different fields changed on each side merges field by field", () => {
  const base = { verdict: "reject", text: BASE, modes: ["factual"] };
  const mine = { ...base, modes: ["factual", "omission"] };
  const theirs = { ...base, text: "A test card with a counter." };
  assert.deepEqual(mergeUnit(base, mine, theirs), {
    value: { verdict: "reject", text: "A test card with a counter.", modes: ["factual", "omission"] }, conflict: false, fields: [],
  });
});

test("an accept on one side and an edit on the other is a conflict", () => {
  const base = { verdict: "reject", text: BASE, modes: [] };
  assert.equal(mergeUnit(base, { ...base, text: "Edited." }, { verdict: "accept", text: "", modes: [] }).conflict, true);
  assert.equal(mergeUnit(base, { ...base, verdict: "accept" }, { ...base, verdict: "accept" }).conflict, false);
});

test("numbers changed on both sides differently are a conflict; the same number is not", () => {
  const base = { index: 1, verdict: "reject", scene: "s", shot: "t", start: 2, end: 4, modes: [] };
  assert.equal(mergeUnit(base, { ...base, end: 3.5 }, { ...base, end: 3.8 }).conflict, true);
  assert.equal(mergeUnit(base, { ...base, end: 3.5 }, { ...base, end: 3.5, scene: "s!" }).value.scene, "s!");
});

test("both sides rejecting and editing different stretches merge", () => {
  const base = { verdict: "", text: BASE, modes: [] };
  const mine = { verdict: "reject", text: `Colour bars: ${BASE}`, modes: ["factual"] };
  const theirs = { verdict: "reject", text: `${BASE} Then five.`, modes: ["omission"] };
  assert.deepEqual(mergeUnit(base, mine, theirs, { modeOrder: ["factual", "omission"] }).value,
    { verdict: "reject", text: `Colour bars: ${BASE} Then five.`, modes: ["factual", "omission"] });
});

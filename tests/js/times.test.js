import assert from "node:assert/strict";
import { test } from "node:test";

import { joinProblems, readSeconds, timeFieldProblems, timelineFieldProblems } from "../../frontend/static/frontend/times.js";

const clip = { duration: 6 };

test("an empty or non-numeric field reads as NaN, never as 0", () => {
  assert.ok(Number.isNaN(readSeconds("")));
  assert.ok(Number.isNaN(readSeconds(null)));
  assert.ok(Number.isNaN(readSeconds("soon")));
  assert.equal(readSeconds("2.5"), 2.5);
  assert.equal(readSeconds("0"), 0);
});

test("a sound window has no problem", () => {
  assert.deepEqual(timeFieldProblems(0, 2, clip), { start: "", end: "" });
  assert.deepEqual(timeFieldProblems(5.9, 6.4, clip), { start: "", end: "" }, "half a second past the end is allowed");
});

test("an end before its start is said at the end field", () => {
  const problems = timeFieldProblems(3, 2, clip);
  assert.equal(problems.start, "");
  assert.equal(problems.end, "The end must come after the start (3.00 s).");
});

test("each impossible value is said at its own field", () => {
  assert.equal(timeFieldProblems(NaN, 2, clip).start, "Type the start in seconds.");
  assert.equal(timeFieldProblems(0, NaN, clip).end, "Type the end in seconds.");
  assert.equal(timeFieldProblems(-1, 2, clip).start, "The start cannot be before 0 s.");
  assert.equal(timeFieldProblems(0, 99, clip).end, "The end is after the clip ends (6.00 s).");
  assert.equal(timeFieldProblems(7, 8, clip).start, "The start is after the clip ends (6.00 s).");
  assert.equal(timeFieldProblems(2, 2, clip).end, "The end must come after the start (2.00 s).");
});

test("overlapping windows are said at the later window's start", () => {
  const problems = timelineFieldProblems([{ start: 0, end: 2 }, { start: 1.5, end: 4 }, { start: 4, end: 6 }], clip);
  assert.deepEqual(problems.map(joinProblems), ["", "The start is before the previous window ends (2.00 s).", ""]);
});

test("joinProblems makes one sentence of both fields", () => {
  assert.equal(joinProblems({ start: "A.", end: "B." }), "A. B.");
  assert.equal(joinProblems({ start: "", end: "" }), "");
});

test("a decimal comma reads as a decimal point; anything but one number is NaN", () => {
  assert.equal(readSeconds("0,5"), 0.5);
  assert.equal(readSeconds(" 7,25 "), 7.25);
  assert.equal(readSeconds(",5"), 0.5);
  assert.equal(readSeconds(3), 3);
  for (const bad of ["05,5,5", "1.2.3", "5 s", "1e3", "0x10", "-", "."]) {
    assert.ok(Number.isNaN(readSeconds(bad)), bad);
  }
});

test("a window retimed over its neighbour names the neighbour at the field that overlaps", () => {
  const next = { number: 2, start: 5, end: 10 };
  const previous = { number: 1, start: 0, end: 5 };
  assert.equal(timeFieldProblems(0, 7.5, { duration: 20, next }).end, "The end overlaps window 2 (starts 5.00 s).");
  assert.equal(timeFieldProblems(4, 7, { duration: 20, previous }).start, "The start overlaps window 1 (ends 5.00 s).");
  assert.deepEqual(timeFieldProblems(5, 10, { duration: 20, previous, next: { number: 3, start: 10, end: 12 } }),
    { start: "", end: "" }, "touching neighbours is not overlapping");
});

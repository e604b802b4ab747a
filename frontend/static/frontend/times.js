// Checking times typed in seconds (window starts and ends), shared by the workspace and
// the QC review. Pure: no DOM, so that it runs (and is tested) in Node as well.

import { seconds } from "./workspace-dom.js";

// A typed value as seconds: NaN for an empty or non-numeric field (never 0 by accident).
// A decimal comma is read as a decimal point ("0,5" is half a second); anything else that
// is not one plain number ("1,2,3", "5 s", "1e3") is NaN, so that the field says so.
export function readSeconds(value) {
  if (value === "" || value === null || value === undefined) return NaN;
  if (typeof value === "number") return value;
  const text = String(value).trim().replace(",", ".");
  return /^[+-]?(\d+\.?\d*|\.\d+)$/.test(text) ? Number(text) : NaN;
}

// What is wrong with one start/end pair, per field ("" when nothing), so that the page can
// put each message next to the field that has to change. `duration` is the clip's length
// (the server allows half a second past it); `previousEnd` the end of the window before.
// `previous` / `next` ({number, start, end}) are the neighbouring windows of a pass whose
// windows are retimed one by one: a time past one of them names it.
export function timeFieldProblems(start, end, { duration, previousEnd = null, previous = null, next = null }) {
  const limit = duration + 0.5;
  const problems = { start: "", end: "" };
  if (!Number.isFinite(start)) problems.start = "Type the start in seconds.";
  else if (start < 0) problems.start = "The start cannot be before 0 s.";
  else if (start > limit) problems.start = `The start is after the clip ends (${seconds(duration)}).`;
  else if (previousEnd !== null && start < previousEnd - 1e-9) {
    problems.start = `The start is before the previous window ends (${seconds(previousEnd)}).`;
  }
  if (!Number.isFinite(end)) problems.end = "Type the end in seconds.";
  else if (end > limit) problems.end = `The end is after the clip ends (${seconds(duration)}).`;
  else if (end < 0) problems.end = "The end cannot be before 0 s.";
  else if (Number.isFinite(start) && end <= start) problems.end = `The end must come after the start (${seconds(start)}).`;
  if (!problems.start && previous && start < previous.end - 1e-9) {
    problems.start = `The start overlaps window ${previous.number} (ends ${seconds(previous.end)}).`;
  }
  if (!problems.end && next && end > next.start + 1e-9) {
    problems.end = `The end overlaps window ${next.number} (starts ${seconds(next.start)}).`;
  }
  return problems;
}

// The problems of a list of consecutive windows, one {start, end} per window (overlaps included).
export function timelineFieldProblems(list, { duration }) {
  return list.map((w, i) => timeFieldProblems(w.start, w.end, { duration, previousEnd: i ? list[i - 1].end : null }));
}

// Both fields' problems as one sentence ("" when none).
export function joinProblems({ start, end }) {
  return [start, end].filter(Boolean).join(" ");
}

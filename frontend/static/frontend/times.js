// Checking times typed in seconds (window starts and ends), shared by the workspace and
// the QC review. Pure: no DOM, so that it runs (and is tested) in Node as well.

import { seconds } from "./workspace-dom.js";

// A typed value as seconds: NaN for an empty or non-numeric field (never 0 by accident).
export function readSeconds(value) {
  if (value === "" || value === null || value === undefined) return NaN;
  return Number(value);
}

// What is wrong with one start/end pair, per field ("" when nothing), so that the page can
// put each message next to the field that has to change. `duration` is the clip's length
// (the server allows half a second past it); `previousEnd` the end of the window before.
export function timeFieldProblems(start, end, { duration, previousEnd = null }) {
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

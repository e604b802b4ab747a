// The workspace's units of work as plain data: the overview, each window, the
// segmentation. Normalised so that two versions of a unit compare equal exactly
// when the server would store the same thing, plus what is still missing in each.
// Pure: no DOM, so that it runs (and is tested) in Node as well as in the page.

import {
  joinProblems, readSeconds, timeFieldProblems as checkTimes, timelineFieldProblems as checkTimeline,
} from "./times.js";

export function unitModel({ clip, caption, taxonomy }) {
  const originals = caption.windows;
  const N = originals.length;
  const MODES = taxonomy.modes;
  const ORDER = MODES.map((mode) => mode.key);

  const num = readSeconds;
  const sortModes = (modes) => [...new Set(modes)].filter((m) => ORDER.includes(m)).sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
  const modeName = (key) => MODES.find((mode) => mode.key === key)?.name || key;

  function normOverview(o) {
    return { verdict: o?.verdict || "", text: o?.text ?? "", modes: sortModes(o?.modes || []) };
  }

  function normWindow(position, w) {
    const o = originals[position];
    return {
      index: o.index, verdict: w?.verdict || "", scene: w?.scene ?? o.scene, shot: w?.shot ?? o.shot,
      start: num(w?.start ?? o.start), end: num(w?.end ?? o.end), modes: sortModes(w?.modes || []),
    };
  }

  function normSegmentation(s) {
    return {
      verdict: s?.verdict || "",
      modes: sortModes(s?.modes || []),
      windows: (s?.windows || []).map((w) => ({ start: num(w.start), end: num(w.end), scene: w.scene ?? "", shot: w.shot ?? "" })),
    };
  }

  function fromPass(pass) {
    const byIndex = new Map((pass?.windows || []).map((w) => [w.index, w]));
    return {
      overview: normOverview(pass?.overview),
      windows: originals.map((o, position) => normWindow(position, byIndex.get(o.index))),
      segmentation: normSegmentation(pass?.segmentation),
    };
  }

  const isWindowKey = (key) => /^w:\d+$/.test(key) && Number(key.slice(2)) < N;
  const positionOf = (key) => Number(key.slice(2));

  function unitOf(draftLike, key) {
    if (key === "overview") return draftLike.overview;
    if (key === "segmentation") return draftLike.segmentation;
    return draftLike.windows[positionOf(key)];
  }

  function setUnit(draftLike, key, value) {
    if (key === "overview") draftLike.overview = normOverview(value);
    else if (key === "segmentation") draftLike.segmentation = normSegmentation(value);
    else draftLike.windows[positionOf(key)] = normWindow(positionOf(key), value);
  }

  const timeFieldProblems = (start, end) => checkTimes(start, end, { duration: clip.duration });
  const timesProblem = (start, end) => joinProblems(timeFieldProblems(start, end));
  const timelineFieldProblems = (list) => checkTimeline(list, { duration: clip.duration });

  // A window of the window pass, at `start`/`end`, against its neighbours as the draft has
  // them (each at its effective times: corrected while rejected, else the original's).
  function windowFieldProblems(draftLike, position, start = draftLike.windows[position].start, end = draftLike.windows[position].end) {
    const neighbour = (p) => (p < 0 || p >= N ? null : { number: p + 1, start: draftLike.windows[p].start, end: draftLike.windows[p].end });
    return checkTimes(start, end, { duration: clip.duration, previous: neighbour(position - 1), next: neighbour(position + 1) });
  }

  // Why the window at `position` cannot be accepted now ("" when it can): accepting puts it
  // back at its original times, which a neighbour retimed meanwhile may overlap.
  function acceptProblem(draftLike, position) {
    const o = originals[position];
    const problem = joinProblems(windowFieldProblems(draftLike, position, o.start, o.end));
    return problem ? `Accepting puts it back at ${o.start.toFixed(2)}–${o.end.toFixed(2)} s. ${problem} Retime that window first.` : "";
  }

  function timelineProblem(list) {
    for (const [i, problems] of timelineFieldProblems(list).entries()) {
      if (joinProblems(problems)) return `Corrected window ${i + 1}: ${joinProblems(problems)}`;
    }
    return "";
  }

  // The time problem of a unit as the person has it on screen ("" when none): it blocks
  // accepting the unit and moving on from it until it is fixed.
  function unitTimeProblem(draftLike, key) {
    if (isWindowKey(key)) {
      const w = unitOf(draftLike, key);
      return w.verdict === "reject" ? joinProblems(windowFieldProblems(draftLike, positionOf(key))) : "";
    }
    if (key === "segmentation") {
      const s = draftLike.segmentation;
      return s.verdict === "reject" ? timelineProblem(s.windows) : "";
    }
    return "";
  }

  // Whether the unit may be saved as it is; a window also against its neighbours in `draftLike`.
  function unitValid(key, value, draftLike = null) {
    if (isWindowKey(key)) {
      if (!draftLike) return !timesProblem(value.start, value.end);
      return !joinProblems(windowFieldProblems(draftLike, positionOf(key), value.start, value.end));
    }
    if (key === "segmentation") return value.verdict !== "reject" || !timelineProblem(value.windows);
    return true;
  }

  function overviewProblems(o) {
    if (!o.verdict) return ["Accept or reject the overview."];
    if (o.verdict === "accept") return [];
    const problems = [];
    if (o.text.trim() === caption.overview.trim()) problems.push("Change the text: a rejected overview needs a corrected text.");
    if (!o.modes.length) problems.push("Tag at least one failure mode.");
    return problems;
  }

  function windowProblems(draft, position) {
    const w = draft.windows[position];
    const o = originals[position];
    if (!w.verdict) return ["Accept or reject this window."];
    const problems = [];
    const timing = joinProblems(windowFieldProblems(draft, position));
    if (timing) problems.push(timing);
    if (w.verdict === "reject") {
      if (w.scene === o.scene && w.shot === o.shot && w.start === o.start && w.end === o.end) {
        problems.push("Correct the scene, the shot or the timestamps.");
      }
      if (!w.modes.length) problems.push("Tag at least one failure mode.");
    }
    return problems;
  }

  function segmentationProblems(draft) {
    const s = draft.segmentation;
    if (!s.verdict) return ["Accept or reject the window boundaries."];
    if (s.verdict === "accept") return [];
    const problems = [];
    if (!s.modes.length) problems.push("Tag at least one failure mode.");
    if (!s.windows.length) problems.push("Give the corrected windows.");
    const timing = timelineProblem(s.windows);
    if (timing) problems.push(timing);
    const unchanged = s.windows.length === N && s.windows.every((w, i) => w.start === draft.windows[i].start && w.end === draft.windows[i].end);
    if (unchanged) problems.push("Change the boundaries: merge, split or retime a window.");
    return problems;
  }

  // Judged, for the progress count: a verdict, and for a reject something to show for it
  // (a correction or a failure mode). Completeness (both, for a reject) is unitProblems.
  function windowJudged(draft, position) {
    const w = draft.windows[position];
    const o = originals[position];
    if (w.verdict !== "reject") return w.verdict === "accept";
    const changed = w.scene !== o.scene || w.shot !== o.shot || w.start !== o.start || w.end !== o.end;
    return changed || w.modes.length > 0;
  }

  function segmentationJudged(draft) {
    const s = draft.segmentation;
    if (s.verdict !== "reject") return s.verdict === "accept";
    const changed = s.windows.length !== N || s.windows.some((w, i) => w.start !== draft.windows[i].start || w.end !== draft.windows[i].end);
    return changed || s.modes.length > 0;
  }

  function unitProblems(draft, unit) {
    return unit >= N ? segmentationProblems(draft) : windowProblems(draft, unit);
  }

  function firstOpenUnit(draft) {
    for (let unit = 0; unit <= N; unit += 1) if (unitProblems(draft, unit).length) return unit;
    return -1;
  }

  return {
    num, sortModes, modeName, normWindow, fromPass, isWindowKey, positionOf, unitOf, setUnit,
    timeFieldProblems, timesProblem, timelineFieldProblems, timelineProblem, unitTimeProblem, unitValid,
    windowFieldProblems, acceptProblem,
    overviewProblems, windowProblems, segmentationProblems, unitProblems, firstOpenUnit, windowJudged,
    segmentationJudged,
  };
}

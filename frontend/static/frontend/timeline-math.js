// The timeline's arithmetic, apart from the page: where ticks go and where a dragged
// boundary lands. Pure functions, tested under node (tests/frontend/js/timeline_math.test.mjs).

// Tick spacings in seconds, from one frame at 25 fps up to ten minutes.
const STEPS = [0.04, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600];
const LABEL_PX = 70; // labelled ticks at least this far apart, so that labels never overlap
const MINOR_PX = 12; // unlabelled ticks at least this far apart

/**
 * Tick spacing for a ruler drawn at `pixelsPerSecond`: `major` (labelled) and `minor` ticks,
 * both in seconds, major a whole multiple of minor.
 */
export function tickStep(pixelsPerSecond) {
  const major = STEPS.find((step) => step * pixelsPerSecond >= LABEL_PX) ?? STEPS[STEPS.length - 1];
  const divisions = [10, 5, 2].find((n) => (major / n) * pixelsPerSecond >= MINOR_PX) ?? 1;
  return { major, minor: major / divisions };
}

/** The start of frame `frame` in seconds, to the millisecond (the precision times are stored at). */
export function frameTime(frame, fps) {
  return Math.round((frame / fps) * 1000) / 1000;
}

/**
 * Where a boundary dragged to `t` lands: on the nearest shot change when one is within
 * `tolerance` seconds (shots: ascending seconds; pass [] to switch snapping to them off),
 * otherwise on the start of the nearest whole frame.
 */
export function snapTime(t, { fps, shots = [], tolerance = 0 }) {
  let best = null;
  for (const shot of shots) {
    const distance = Math.abs(shot - t);
    if (distance <= tolerance && (best === null || distance < Math.abs(best - t))) best = shot;
  }
  if (best !== null) return best;
  return frameTime(Math.round(t * fps), fps);
}

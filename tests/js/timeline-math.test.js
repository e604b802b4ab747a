// Unit tests of the timeline's arithmetic (node --test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { frameTime, snapTime, tickStep } from "../../frontend/static/frontend/timeline-math.js";

test("labelled ticks are at least 70 px apart and minor ticks divide them", () => {
  for (const pps of [0.5, 3, 10, 40, 100, 400, 1600, 5000]) {
    const { major, minor } = tickStep(pps);
    assert.ok(major * pps >= 70 || major === 600, `major ${major} at ${pps} px/s`);
    assert.ok(Math.abs(major / minor - Math.round(major / minor)) < 1e-9);
  }
  assert.deepEqual(tickStep(1), { major: 120, minor: 12 });
  assert.equal(tickStep(2000).major, 0.04);
});

test("a boundary lands on a whole frame", () => {
  assert.equal(snapTime(1.013, { fps: 25 }), 1.0);
  assert.equal(snapTime(1.021, { fps: 25 }), 1.04);
  assert.equal(snapTime(2.5, { fps: 30 }), 2.5);
  assert.equal(snapTime(0.05, { fps: 29.97 }), 0.033);
  assert.equal(frameTime(3, 29.97), 0.1);
});

test("a boundary near a shot change snaps to it, and only within the tolerance", () => {
  const shots = [2.0, 3.52];
  assert.equal(snapTime(3.45, { fps: 25, shots, tolerance: 0.1 }), 3.52);
  assert.equal(snapTime(3.3, { fps: 25, shots, tolerance: 0.1 }), 3.32);
  assert.equal(snapTime(3.45, { fps: 25, shots: [], tolerance: 0.1 }), 3.44);
  assert.equal(snapTime(2.7, { fps: 25, shots, tolerance: 1 }), 2.0); // the nearest of two
});

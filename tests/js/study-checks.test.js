// The New study page's field checks give the server's verdicts (annotation/rules/study_settings.py).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  parseNearTotal, parsePercent, parseThresholds, parseWhole, slugProblem, slugSuggest,
} from "../../frontend/static/frontend/study-checks.js";

const LIMITS = { slug_min: 2, slug_max: 60, thresholds_max_count: 8, threshold_max_words: 1000, reserved_slugs: ["new"] };

test("a slug is suggested from the name as the server suggests it", () => {
  assert.equal(slugSuggest("Walk study: Café 2026!"), "walk-study-cafe-2026");
  assert.equal(slugSuggest("  --  "), "");
});

test("slugs outside the pattern, too short or reserved are refused with a reason", () => {
  assert.equal(slugProblem("walk-study", LIMITS), null);
  assert.match(slugProblem("Walk_Study", LIMITS), /lowercase letters, digits and single hyphens/);
  assert.match(slugProblem("a--b", LIMITS), /single hyphens/);
  assert.match(slugProblem("a", LIMITS), /2 to 60 characters/);
  assert.match(slugProblem("new", LIMITS), /name of a page/);
  assert.match(slugProblem("", LIMITS), /Give the study a slug/);
});

test("word thresholds must be whole numbers that ascend", () => {
  assert.deepEqual(parseThresholds("1, 3, 6, 16", LIMITS), { value: [1, 3, 6, 16] });
  assert.match(parseThresholds("1, 6, 3", LIMITS).problem, /must ascend.*3 comes after 6/);
  assert.match(parseThresholds("1, 3, 3", LIMITS).problem, /must ascend/);
  assert.match(parseThresholds("1, 2.5", LIMITS).problem, /whole numbers.*'2.5'/);
  assert.match(parseThresholds("0, 3", LIMITS).problem, /from 1 to 1000/);
  assert.match(parseThresholds("", LIMITS).problem, /at least one/);
  assert.match(parseThresholds("1 2 3 4 5 6 7 8 9", LIMITS).problem, /At most 8/);
});

test("the near-total cut lies strictly between 0 and 1", () => {
  assert.deepEqual(parseNearTotal("0.55"), { value: 0.55 });
  assert.match(parseNearTotal("1").problem, /\(0, 1\)/);
  assert.match(parseNearTotal("0").problem, /\(0, 1\)/);
  assert.match(parseNearTotal("abc").problem, /must be a number/);
});

test("percentages become shares within their range", () => {
  assert.deepEqual(parsePercent("5", "length band", 0.5), { value: 0.05 });
  assert.match(parsePercent("60", "length band", 0.5).problem, /from 0 to 50%/);
  assert.match(parsePercent("-1", "overlap", 1).problem, /from 0 to 100%/);
});

test("whole numbers, optionally empty", () => {
  assert.deepEqual(parseWhole("", "undo time", 0, 3600, { empty: true }), { value: null });
  assert.deepEqual(parseWhole("10", "undo time", 0, 3600), { value: 10 });
  assert.match(parseWhole("4000", "undo time", 0, 3600).problem, /from 0 to 3600/);
  assert.match(parseWhole("1.5", "spread gap", 0, 1000).problem, /whole number/);
});

import assert from "node:assert/strict";
import { test } from "node:test";

import { installDom } from "./fake-dom.js";

installDom({ cookie: "csrftoken=abc" });
const { liveMeasurer, measuredInPage } = await import("../../frontend/static/frontend/live-edits.js");
const { liveEditSize } = await import("../../frontend/static/frontend/edits.js");

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

function recorder() {
  const shown = [];
  return { shown, show: (target, size, note) => shown.push({ size, note }) };
}

test("spaced languages are measured in the page, at once, with edits.js's numbers", () => {
  for (const language of ["en", "other", undefined]) {
    const { shown, show } = recorder();
    const target = { original: "a red car", shown: "a blue car" };
    liveMeasurer({ study: "s", language, cut: 0.55, show, post: () => assert.fail("no request") })(target, "a blue car");
    assert.deepEqual(shown, [{ size: liveEditSize("a red car", "a blue car", 0.55), note: "" }]);
  }
  assert.equal(measuredInPage("en"), true);
});

test("Chinese and Japanese show the server's numbers after a pause, and say so", async () => {
  for (const language of ["zh", "ja"]) {
    assert.equal(measuredInPage(language), false);
    const { shown, show } = recorder();
    const asked = [];
    const answer = { words_changed: 2, char_similarity: 0.8, near_total: false, diff: [] };
    const post = async (body) => { asked.push(body); return answer; };
    const measure = liveMeasurer({ study: "s1", language, cut: 0.5, show, post, pause: 5 });
    const target = { original: "一个男人", shown: "一个女" };
    measure(target, "一个女");
    target.shown = "一个女人";
    measure(target, "一个女人"); // typing on: only the last text is asked for
    await sleep(30);
    assert.deepEqual(asked, [{ study: "s1", original: "一个男人", corrected: "一个女人", near_total_cut: 0.5 }]);
    assert.equal(shown[0].size, null);
    assert.match(shown[0].note, /counted by the server/);
    const last = shown[shown.length - 1];
    assert.equal(last.size, answer);
    assert.match(last.note, /^Edit size from the server \((Chinese|Japanese) words/);
  }
});

test("an unreachable server is said, and a late answer for an older text is dropped", async () => {
  const { shown, show } = recorder();
  const target = { original: "一个男人", shown: "一个女人" };
  liveMeasurer({ study: "s1", language: "zh", cut: 0.5, show, pause: 1, post: async () => { throw new Error("offline"); } })(target, "一个女人");
  await sleep(20);
  assert.match(shown[shown.length - 1].note, /cannot be reached/);

  const late = recorder();
  const moved = { original: "一个男人", shown: "一个女人" };
  liveMeasurer({ study: "s1", language: "zh", cut: 0.5, show: late.show, pause: 1,
    post: async () => { moved.shown = "something newer"; return { words_changed: 1 }; } })(moved, "一个女人");
  await sleep(20);
  assert.equal(late.shown.length, 1); // only "measuring…"
});

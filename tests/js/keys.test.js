import assert from "node:assert/strict";
import { test } from "node:test";

import { Element, installDom } from "./fake-dom.js";

installDom();
const { SHORTCUTS, actionFor, isTyping, renderHelp } = await import("../../frontend/static/frontend/workspace-keys.js");

const body = new Element("body");
const textarea = new Element("textarea");
const textInput = Object.assign(new Element("input"), { type: "text" });
const checkbox = Object.assign(new Element("input"), { type: "checkbox" });

const press = (key, { target = body, code = "", ctrlKey = false, altKey = false, metaKey = false } = {}) =>
  actionFor({ key, code, target, ctrlKey, altKey, metaKey });

test("plain keys act outside text fields", () => {
  assert.deepEqual(press("a"), { action: "accept" });
  assert.deepEqual(press("R"), { action: "reject" });
  assert.deepEqual(press(" "), { action: "play" });
  assert.deepEqual(press("3"), { action: "mode", mode: 3 });
  assert.deepEqual(press("?"), { action: "help" });
  assert.equal(press("z"), null);
});

test("plain keys type into text fields, and act with Alt (by physical key)", () => {
  assert.equal(press("a", { target: textarea }), null);
  assert.equal(press("2", { target: textInput }), null);
  assert.deepEqual(press("å", { target: textarea, altKey: true, code: "KeyA" }), { action: "accept" });
  assert.deepEqual(press("™", { target: textarea, altKey: true, code: "Digit2" }), { action: "mode", mode: 2 });
  assert.deepEqual(press("a", { target: checkbox }), { action: "accept" }, "a checkbox is not a text field");
});

test("Ctrl+Enter, Ctrl+S and Escape work everywhere; other Ctrl keys are the browser's", () => {
  assert.deepEqual(press("Enter", { target: textarea, ctrlKey: true }), { action: "submit" });
  assert.deepEqual(press("s", { target: textarea, metaKey: true }), { action: "save" });
  assert.deepEqual(press("Escape", { target: textarea }), { action: "escape" });
  assert.equal(press("a", { ctrlKey: true }), null);
});

test("isTyping knows text fields from other controls", () => {
  assert.equal(isTyping(textarea), true);
  assert.equal(isTyping(textInput), true);
  assert.equal(isTyping(checkbox), false);
  assert.equal(isTyping(body), false);
  assert.equal(isTyping(null), false);
});

test("the help lists every shortcut, grouped", () => {
  const container = new Element("div");
  renderHelp(container);
  const groups = new Set(SHORTCUTS.map((shortcut) => shortcut.group));
  assert.equal(container.children.length, groups.size);
  const text = container.textContent;
  for (const shortcut of SHORTCUTS) assert.ok(text.includes(shortcut.label), shortcut.label);
});

test("G opens the guidelines: a key no other shortcut takes, typed as a letter in text fields", () => {
  assert.deepEqual(press("g"), { action: "guidelines" });
  assert.deepEqual(press("g", { target: textarea, code: "KeyG", altKey: true }), { action: "guidelines" });
  assert.equal(press("g", { target: textarea }), null);
  const taken = SHORTCUTS.flatMap((shortcut) => shortcut.keys.flat()).filter((key) => key === "G");
  assert.equal(taken.length, 1);
});

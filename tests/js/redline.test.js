import assert from "node:assert/strict";
import { test } from "node:test";

import { Element, installDom } from "./fake-dom.js";

installDom({ cookie: "theme=dark; csrftoken=abc%3D123; other=1" });
const { csrfToken, renderRedline } = await import("../../frontend/static/frontend/redline.js");

test("a redline is ins, del and plain spans, with the text as text", () => {
  const container = new Element("p");
  container.append("stale");
  renderRedline(container, [
    { op: "equal", text: "A counter " },
    { op: "delete", text: "counts up." },
    { op: "insert", text: "<b>reaches</b> five." },
  ]);
  assert.deepEqual(container.children.map((node) => node.tagName), ["SPAN", "DEL", "INS"]);
  assert.equal(container.children[2].textContent, "<b>reaches</b> five.");
  assert.equal(container.textContent, "A counter counts up.<b>reaches</b> five.");
});

test("the CSRF token is read from its cookie, decoded", () => {
  assert.equal(csrfToken(), "abc=123");
  globalThis.document.cookie = "theme=dark";
  assert.equal(csrfToken(), "");
});

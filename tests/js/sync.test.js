import assert from "node:assert/strict";
import { afterEach, test } from "node:test";

import { installDom } from "./fake-dom.js";

const { store } = installDom({ cookie: "csrftoken=t0ken" });
const { Sync } = await import("../../frontend/static/frontend/workspace-sync.js");

const reply = (status, body) => ({ ok: status >= 200 && status < 300, status, json: async () => body });
const syncs = [];

// A Sync over a page with units {key: value}; `valid` says which are valid. Records every
// status it shows and every request it sends; `answer(request)` is the server.
function harness({ units, invalid = new Set(), answer }) {
  const shown = [];
  const requests = [];
  const events = { saved: [], conflicts: [], refused: [] };
  globalThis.fetch = async (url, init) => {
    const request = { url, method: init.method, headers: init.headers, body: JSON.parse(init.body) };
    requests.push(request);
    return answer(request);
  };
  const sync = new Sync({
    id: 7,
    version: 3,
    unit: (key) => ({ value: units[key], valid: !invalid.has(key) }),
    extras: () => ({ changes: {}, pending: false }),
    extrasSent: () => {},
    onSaved: (answer) => events.saved.push(answer),
    onConflict: (current, detail) => events.conflicts.push({ current, detail }),
    onRejected: (detail) => events.refused.push(detail),
    onStatus: (state, info) => shown.push({ state, ...info }),
  });
  syncs.push(sync);
  return { sync, shown, requests, events, last: () => shown[shown.length - 1].state };
}

afterEach(() => {
  for (const sync of syncs.splice(0)) sync.block();
  store.clear();
});

test("a change is sent with the version it is based on, and shown saved once acknowledged", async () => {
  const units = { "w:0": { index: 0, verdict: "accept" } };
  const page = harness({ units, answer: () => reply(200, { version: 4 }) });
  page.sync.mark("w:0");
  assert.equal(page.last(), "dirty");
  assert.equal(await page.sync.save(), true);
  assert.equal(page.requests.length, 1);
  const [request] = page.requests;
  assert.equal(request.url, "/api/annotations/7/draft/");
  assert.equal(request.method, "PATCH");
  assert.equal(request.headers["X-CSRFToken"], "t0ken");
  assert.deepEqual(request.body, { base_version: 3, changes: { windows: [{ index: 0, verdict: "accept" }] } });
  const states = page.shown.map((s) => s.state);
  assert.ok(states.indexOf("saving") < states.lastIndexOf("saved"));
  assert.equal(page.last(), "saved");
  assert.equal(page.sync.version, 4);
  assert.equal(page.sync.has("w:0"), false);
});

test("an invalid unit is never sent and never shown as saved", async () => {
  const units = { "w:0": { index: 0, verdict: "reject", start: 3, end: 2 }, overview: { verdict: "accept" } };
  const page = harness({ units, invalid: new Set(["w:0"]), answer: () => reply(200, { version: 4 }) });
  page.sync.mark("w:0");
  page.sync.mark("overview");
  await page.sync.save();
  assert.deepEqual(Object.keys(page.requests[0].body.changes), ["overview"]);
  assert.equal(page.last(), "invalid");
  assert.ok(!page.shown.slice(1).some((s) => s.state === "saved"), "never 'saved' while a change waits");
  assert.equal(page.sync.has("w:0"), true);
  assert.deepEqual(JSON.parse(store.get("redline:annotation:7")).units, { "w:0": units["w:0"] });
});

test("a change made while its save was in flight stays unsaved", async () => {
  const units = { overview: { verdict: "reject", text: "First." } };
  let release;
  const page = harness({ units, answer: () => new Promise((resolve) => { release = () => resolve(reply(200, { version: 4 })); }) });
  page.sync.mark("overview");
  const saving = page.sync.save();
  await new Promise((resolve) => setImmediate(resolve));
  units.overview = { verdict: "reject", text: "Second." };
  page.sync.mark("overview");
  assert.equal(page.last(), "saving");
  page.sync.block(); // stop the follow-up save: this test is about the first answer
  release();
  await saving;
  assert.equal(page.sync.has("overview"), true);
});

test("a stale save is a conflict: the page is handed the current state and saving stops", async () => {
  const current = { version: 9, state: "in_progress", annotator_pass: {} };
  const page = harness({ units: { overview: { verdict: "accept" } }, answer: () => reply(409, { detail: "Changed.", current }) });
  page.sync.mark("overview");
  assert.equal(await page.sync.save(), false);
  assert.deepEqual(page.events.conflicts, [{ current, detail: "Changed." }]);
  assert.equal(page.last(), "conflict");
  assert.equal(page.sync.blocked, true);
  assert.equal(page.sync.has("overview"), true);
});

test("a study's state refusal (409 without current) is shown as refused, not as a conflict", async () => {
  const detail = "Study Lab is closed: it can be read, exported, released and archived; nothing in it changes.";
  const page = harness({ units: { overview: { verdict: "accept" } }, answer: () => reply(409, { detail, state: "closed" }) });
  page.sync.mark("overview");
  assert.equal(await page.sync.save(), false);
  assert.deepEqual(page.events.conflicts, []);
  assert.deepEqual(page.events.refused, [detail]);
  assert.equal(page.sync.has("overview"), true);
});

test("no connection keeps the change on the device and says offline", async () => {
  const page = harness({ units: { overview: { verdict: "accept" } }, answer: () => { throw new TypeError("Failed to fetch"); } });
  page.sync.mark("overview");
  assert.equal(await page.sync.save(), false);
  assert.equal(page.last(), "offline");
  assert.equal(page.shown[page.shown.length - 1].count, 1);
  assert.deepEqual(JSON.parse(store.get("redline:annotation:7")).units, { overview: { verdict: "accept" } });
});

test("a refused change is said with the server's reason", async () => {
  const page = harness({ units: { overview: { verdict: "x" } }, answer: () => reply(400, { detail: "Unknown verdict 'x'." }) });
  page.sync.mark("overview");
  await page.sync.save();
  assert.deepEqual(page.events.refused, ["Unknown verdict 'x'."]);
  assert.equal(page.last(), "error");
});

test("a fault in the page shows as an error, never as a stale 'saved'", () => {
  const page = harness({ units: {}, answer: () => reply(200, { version: 4 }) });
  page.sync.unit = () => { throw new ReferenceError("seconds is not defined"); };
  page.sync.dirty.set("w:0", 1);
  page.sync.status();
  assert.equal(page.last(), "error");
  assert.match(page.shown[page.shown.length - 1].detail, /seconds is not defined.*reload/);
  page.sync.dirty.clear();
  page.sync.status();
  assert.equal(page.last(), "error", "once broken, the page keeps saying so");
});

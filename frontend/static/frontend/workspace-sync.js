// Autosave for the workspace: never lose work.
//
// Every change marks a unit ("overview", "w:<index>", "segmentation") dirty and is
// written to localStorage at once, so a reload, a crashed tab or a dropped
// connection loses nothing. Saves are debounced PATCHes carrying base_version;
// only one is in flight at a time. A network failure keeps the changes queued and
// retries (with backoff, and as soon as the browser is back online); a 409 hands
// the server's current state to the page, which lets the person choose.

import { csrfToken } from "./redline.js";

const DEBOUNCE_MS = 700;
const MAX_WAIT_MS = 4000;
const LAZY_MS = 8000;
const RETRY_MS = [1000, 2000, 4000, 8000, 15000, 30000];

export class Sync {
  // unit(key) -> {value, valid}; extras() -> {changes, pending}; extrasSent(changes) after a save.
  constructor({ id, version, unit, extras, extrasSent, onSaved, onConflict, onRejected, onStatus }) {
    Object.assign(this, { id, version, unit, extras, extrasSent, onSaved, onConflict, onRejected, onStatus });
    this.storageKey = `redline:annotation:${id}`;
    this.dirty = new Map(); // key -> revision
    this.revision = 0;
    this.ui = {};
    this.inFlight = null;
    this.again = false;
    this.blocked = false;
    this.failures = 0;
    this.timer = null;
    this.firstUnsaved = 0;
    this.rejected = "";
    this.fault = "";
    window.addEventListener("online", () => this.retryNow());
  }

  // ------------------------------------------------------------------ local copy

  readLocal() {
    try {
      return JSON.parse(localStorage.getItem(this.storageKey) || "null");
    } catch {
      return null;
    }
  }

  writeLocal() {
    const units = {};
    for (const key of this.dirty.keys()) units[key] = this.unit(key).value;
    try {
      localStorage.setItem(this.storageKey, JSON.stringify({
        version: this.version, units, ui: this.ui, at: Date.now(),
      }));
    } catch {
      // Storage full or disabled: the server copy is all we have; the status says unsaved.
    }
  }

  clearLocal() {
    try {
      localStorage.removeItem(this.storageKey);
    } catch {
      // nothing to clear
    }
  }

  // ------------------------------------------------------------------ changes

  mark(key) {
    this.dirty.set(key, ++this.revision);
    this.rejected = "";
    this.writeLocal();
    this.schedule(DEBOUNCE_MS);
  }

  drop(key) {
    this.dirty.delete(key);
    this.writeLocal();
  }

  dropAll() {
    this.dirty.clear();
    this.writeLocal();
  }

  has(key) {
    return this.dirty.has(key);
  }

  keys() {
    return [...this.dirty.keys()];
  }

  setUi(ui) {
    this.ui = ui;
    this.writeLocal();
  }

  // Something worth saving some time (view state, active time), not urgently.
  touch() {
    this.schedule(LAZY_MS, true);
  }

  setVersion(version) {
    this.version = version;
    this.writeLocal();
  }

  // ------------------------------------------------------------------ saving

  schedule(delay, lazy = false) {
    if (this.blocked) return;
    const now = Date.now();
    if (!lazy && !this.firstUnsaved) this.firstUnsaved = now;
    if (this.timer && lazy) return;
    clearTimeout(this.timer);
    const wait = this.firstUnsaved ? Math.min(delay, Math.max(0, this.firstUnsaved + MAX_WAIT_MS - now)) : delay;
    this.timer = setTimeout(() => { this.timer = null; this.save(); }, wait);
    this.status();
  }

  retryNow() {
    if (this.failures && !this.blocked) {
      clearTimeout(this.timer);
      this.timer = null;
      this.save();
    }
  }

  block() {
    this.blocked = true;
    clearTimeout(this.timer);
    this.timer = null;
    this.status();
  }

  unblock() {
    this.blocked = false;
    this.status();
  }

  // Tell the page where saving stands. "saved" only when the server acknowledged every
  // change; a fault in this page shows as an error, never as a stale "saved".
  status() {
    let state = "saved";
    let detail = this.rejected;
    try {
      if (this.fault) state = "error";
      else if (this.blocked) state = "conflict";
      else if (this.inFlight) state = "saving";
      else if (this.failures) state = "offline";
      else if (this.rejected) state = "error";
      else if ([...this.dirty.keys()].some((key) => !this.unit(key).valid)) state = "invalid";
      else if (this.dirty.size) state = "dirty";
    } catch (error) {
      this.fault = `this page hit a fault (${error.message})`;
    }
    if (this.fault) {
      state = "error";
      detail = `${this.fault}. Your changes are kept on this device; reload the page.`;
    }
    this.onStatus(state, { count: this.dirty.size, detail });
  }

  // A fault in the page's own code: nothing it shows can be trusted to be saved any more.
  broken(message) {
    this.fault = this.fault || message;
    this.status();
  }

  // The body of the next save, or null when there is nothing to send.
  body() {
    const changes = {};
    const sent = new Map();
    for (const [key, revision] of this.dirty) {
      const { value, valid } = this.unit(key);
      if (!valid) continue;
      sent.set(key, revision);
      if (key === "overview") changes.overview = value;
      else if (key === "segmentation") changes.segmentation = value;
      else (changes.windows ||= []).push(value);
    }
    const extras = this.extras();
    if (!sent.size && !extras.pending) return null;
    Object.assign(changes, extras.changes);
    return { payload: { base_version: this.version, changes }, sent, extras: extras.changes };
  }

  // Save now. Resolves true when the save went through (or there was nothing to send).
  async save({ keepalive = false } = {}) {
    if (this.blocked) return false;
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    clearTimeout(this.timer);
    this.timer = null;
    const body = this.body();
    if (!body) {
      this.firstUnsaved = 0;
      this.status();
      return true;
    }
    this.inFlight = this.send(body, keepalive);
    this.status();
    let ok;
    try {
      ok = await this.inFlight;
    } finally {
      this.inFlight = null;
      this.status();
    }
    if (this.again && ok && !this.blocked) {
      this.again = false;
      return this.save();
    }
    this.again = false;
    this.status();
    return ok;
  }

  // Save until nothing valid is left to send. False on a conflict, a refusal or no network.
  async flush() {
    for (let round = 0; round < 8; round += 1) {
      if (this.inFlight) {
        await this.inFlight;
        await new Promise((resolve) => setTimeout(resolve, 0));
        continue;
      }
      if (this.blocked) return false;
      if (!this.body()) return !this.rejected;
      if (!(await this.save())) return false;
    }
    return false;
  }

  async send({ payload, sent, extras }, keepalive) {
    let response;
    try {
      response = await fetch(`/api/annotations/${this.id}/draft/`, {
        method: "PATCH",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        credentials: "same-origin",
        body: JSON.stringify(payload),
        keepalive,
      });
    } catch {
      return this.failed();
    }
    if (response.status >= 500) return this.failed();
    const answer = await response.json().catch(() => ({}));
    if (response.ok) {
      this.failures = 0;
      this.firstUnsaved = 0;
      this.version = answer.version;
      for (const [key, revision] of sent) {
        if (this.dirty.get(key) === revision) this.dirty.delete(key);
      }
      this.extrasSent(extras);
      this.writeLocal();
      this.onSaved(answer);
      return true;
    }
    this.failures = 0;
    if (response.status === 409 && answer.current) {  // an edit conflict; a study's state refusal has none
      this.block();
      this.onConflict(answer.current, answer.detail || "");
      return false;
    }
    // 400/403: the change itself is refused; keep it (locally) until the person edits again.
    this.rejected = answer.detail || `The server refused the change (${response.status}).`;
    this.onRejected(this.rejected);
    return false;
  }

  failed() {
    const delay = RETRY_MS[Math.min(this.failures, RETRY_MS.length - 1)];
    this.failures += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = null; this.save(); }, delay);
    return false;
  }
}

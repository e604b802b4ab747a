// The timeline under a video, as a module of its own: the annotator workspace uses it (through
// player.js) and the QC review can use it for its segmentation amendments.
//
//   const timeline = new Timeline({ video, timeline: element, duration, fps, shots });
//   timeline.setWindows([{start, end}, ...], { editable: (index) => bool, linked: bool });
//   timeline.onRetime((changes, { done }) => ...);   // [{index, start, end}] moved by pointer or keys
//   timeline.onTime((seconds, windowIndex) => ...);  // the playhead moved (index -1: in no window)
//   timeline.seek(seconds) · timeline.currentIndex() · timeline.zoomBy(+1 | -1) · timeline.zoomFit()
//   timeline.zoom (1, 2, 4 … 128) · timeline.scheduleRuler() after the element changed size
//
// What it draws: a time ruler (seconds, and frames when zoomed in), the shot changes found at
// import, the windows, a playhead and the time under the pointer. Click seeks to the exact time
// clicked, dragging scrubs, Ctrl+wheel zooms. An editable window's edges can be dragged (whole
// frames; near a shot change they snap to it unless Shift is held) or moved from the keyboard:
// Tab to an edge, ← / → move it by a frame, Shift+← / → by a second, Home / End to as far as it
// can go. Windows never overlap: an edge stops at its neighbour's (with `linked`, as in a corrected
// segmentation, a boundary two windows share moves as one). setWindows redraws, and keeps the
// keyboard focus on the edge that had it.

import { snapTime, tickStep } from "./timeline-math.js";

const ZOOMS = [1, 2, 4, 8, 16, 32, 64, 128];
const SNAP_PX = 8; // how close (in pixels) a dragged boundary must come to a shot change to snap
const FRAME_TICK_PX = 6; // frames get their own ticks once a frame is at least this wide

function div(className, parent) {
  const node = document.createElement("div");
  node.className = className;
  if (parent) parent.appendChild(node);
  return node;
}

export class Timeline {
  constructor({ video, timeline, duration, fps, shots = [] }) {
    this.video = video;
    this.timeline = timeline;
    this.duration = duration;
    this.fps = fps || 25;
    this.shots = shots.filter((t) => t > 0 && t < duration);
    this.windows = [];
    this.editable = () => false;
    this.linked = false;
    this.listeners = [];
    this.retimeListeners = [];
    this.zoomIndex = 0;
    this.drag = null;

    timeline.replaceChildren();
    this.scroller = div("tl-scroll", timeline);
    this.track = div("tl-track", this.scroller);
    this.ruler = div("tl-ruler", this.track);
    this.shotLayer = div("tl-shots", this.track);
    this.lane = div("tl-lane", this.track);
    this.playhead = div("playhead", this.track);
    this.hoverLine = div("tl-hover", this.track);
    this.hoverLabel = div("tl-hover-label", this.track);
    this.hoverLine.hidden = true;
    this.hoverLabel.hidden = true;
    timeline.dataset.zoom = "1";

    video.muted = true;
    this.track.addEventListener("pointerdown", (event) => this.pointerDown(event));
    this.track.addEventListener("pointermove", (event) => this.pointerMove(event));
    this.track.addEventListener("pointerup", (event) => this.pointerUp(event));
    this.track.addEventListener("pointercancel", (event) => this.pointerUp(event));
    this.track.addEventListener("pointerleave", () => { if (!this.drag) this.showHover(null); });
    this.timeline.addEventListener("wheel", (event) => {
      if (!event.ctrlKey) return;
      event.preventDefault();
      this.zoomBy(event.deltaY < 0 ? 1 : -1, event.clientX);
    }, { passive: false });
    this.scroller.addEventListener("scroll", () => this.scheduleRuler());
    new ResizeObserver(() => this.scheduleRuler()).observe(this.scroller);
    video.addEventListener("timeupdate", () => this.update());
    video.addEventListener("seeked", () => this.update());
    this.drawShots();
    this.scheduleRuler();
  }

  get time() { return this.video.currentTime; }

  seek(seconds) {
    this.video.currentTime = Math.min(Math.max(seconds, 0), this.duration);
    this.update();
  }

  // ---------------------------------------------------------------- geometry

  percent(seconds) { return (100 * seconds) / this.duration; }

  // The time under a pointer at clientX, inside the clip.
  timeAt(clientX) {
    const box = this.track.getBoundingClientRect();
    const t = ((clientX - box.left) / box.width) * this.duration;
    return Math.min(Math.max(t, 0), this.duration);
  }

  pixelsPerSecond() {
    return this.track.getBoundingClientRect().width / this.duration;
  }

  get zoom() { return ZOOMS[this.zoomIndex]; }

  // Zoom in (+1) or out (-1), keeping the time under `clientX` (default: the playhead) in place.
  zoomBy(direction, clientX = null) {
    const next = Math.min(Math.max(this.zoomIndex + direction, 0), ZOOMS.length - 1);
    if (next === this.zoomIndex) return;
    const view = this.scroller.getBoundingClientRect();
    const anchorTime = clientX === null ? this.video.currentTime : this.timeAt(clientX);
    const anchorOffset = clientX === null ? view.width / 2 : clientX - view.left;
    this.zoomIndex = next;
    this.track.style.width = `${this.zoom * 100}%`;
    this.timeline.dataset.zoom = String(this.zoom);
    const width = view.width * this.zoom;
    this.scroller.scrollLeft = Math.max(0, (anchorTime / this.duration) * width - anchorOffset);
    this.scheduleRuler();
  }

  zoomFit() {
    this.zoomBy(-ZOOMS.length);
  }

  // ---------------------------------------------------------------- drawing

  scheduleRuler() {
    if (this.rulerFrame) return;
    this.rulerFrame = requestAnimationFrame(() => {
      this.rulerFrame = null;
      this.drawRuler();
    });
  }

  // Ticks for the part of the ruler in view (and a screen either side), so that a long clip
  // zoomed to frames does not put tens of thousands of nodes in the page.
  drawRuler() {
    const pps = this.pixelsPerSecond();
    if (!pps) return;
    const viewStart = this.scroller.scrollLeft / pps;
    const viewWidth = this.scroller.clientWidth / pps;
    const from = Math.max(0, viewStart - viewWidth);
    const to = Math.min(this.duration, viewStart + 2 * viewWidth);
    const { major, minor } = tickStep(pps);
    const nodes = [];
    const framePx = pps / this.fps;
    this.timeline.dataset.frames = framePx >= FRAME_TICK_PX ? "true" : "false";
    if (framePx >= FRAME_TICK_PX) {
      for (let f = Math.ceil(from * this.fps); f <= to * this.fps; f += 1) {
        const tick = div("tl-tick tl-frame");
        tick.style.left = `${this.percent(f / this.fps)}%`;
        tick.title = `frame ${f}`;
        nodes.push(tick);
      }
    }
    for (let i = Math.ceil(from / minor - 1e-9); i * minor <= to + 1e-9; i += 1) {
      const t = i * minor;
      const isMajor = Math.abs(t / major - Math.round(t / major)) < 1e-6;
      const tick = div(isMajor ? "tl-tick tl-major" : "tl-tick");
      tick.style.left = `${this.percent(t)}%`;
      if (isMajor) {
        const label = div("tl-label", tick);
        label.textContent = formatTick(t, major);
      }
      nodes.push(tick);
    }
    this.ruler.replaceChildren(...nodes);
  }

  drawShots() {
    this.shotLayer.replaceChildren(...this.shots.map((t) => {
      const mark = div("tl-shot");
      mark.style.left = `${this.percent(t)}%`;
      mark.title = `Shot change at ${t.toFixed(2)} s`;
      mark.dataset.time = String(t);
      return mark;
    }));
  }

  // windows: [{start, end}], drawn as segments. `editable(index)` says whose boundaries may be
  // dragged; with `linked`, a boundary two windows share moves as one and windows never overlap.
  setWindows(windows, { editable = () => false, linked = false } = {}) {
    const focused = this.lane.contains(document.activeElement) ? document.activeElement.dataset : null;
    this.windows = windows.map(({ start, end }) => ({ start, end }));
    this.editable = editable;
    this.linked = linked;
    this.lane.replaceChildren(...this.windows.map((window, index) => {
      // A plain box, not a button: its edges are the controls, and a control may not sit in a button.
      const segment = div("segment");
      segment.dataset.index = index;
      if (editable(index)) {
        segment.classList.add("tl-editable");
        for (const edge of ["start", "end"]) {
          const handle = div(`tl-handle tl-${edge}`, segment);
          handle.dataset.edge = edge;
          handle.dataset.index = index;
          handle.tabIndex = 0;
          handle.setAttribute("role", "slider");
          handle.setAttribute("aria-label", `${edge === "start" ? "Start" : "End"} of window ${index + 1}`);
          handle.title = `Drag, or ← → (a frame) and Shift+← → (a second), to move the ${edge} of window ${index + 1} (Shift-drag: no snapping to shot changes)`;
          handle.addEventListener("keydown", (event) => this.keyDown(event, index, edge));
        }
      }
      this.placeSegment(segment, window, index);
      return segment;
    }));
    if (focused?.edge) this.lane.querySelector(`.tl-handle[data-index="${focused.index}"][data-edge="${focused.edge}"]`)?.focus();
    this.update();
  }

  placeSegment(segment, window, index) {
    segment.style.left = `${this.percent(window.start)}%`;
    segment.style.width = `${this.percent(window.end - window.start)}%`;
    segment.title = `Window ${index + 1}: ${window.start.toFixed(2)}–${window.end.toFixed(2)} s`;
    for (const handle of segment.querySelectorAll(".tl-handle")) {
      const [low, high] = this.bounds(index, handle.dataset.edge);
      const value = window[handle.dataset.edge];
      handle.setAttribute("aria-valuemin", String(low));
      handle.setAttribute("aria-valuemax", String(high));
      handle.setAttribute("aria-valuenow", String(value));
      handle.setAttribute("aria-valuetext", `${value.toFixed(2)} s`);
    }
  }

  currentIndex() {
    const t = this.video.currentTime;
    return this.windows.findIndex((w) => t >= w.start && t < w.end);
  }

  onTime(listener) { this.listeners.push(listener); }

  // listener([{index, start, end}], {done}) hears about windows retimed by dragging on the
  // timeline: while dragging (done false) and once when the pointer is let go (done true).
  onRetime(listener) { this.retimeListeners.push(listener); }

  update() {
    const t = this.video.currentTime;
    this.playhead.style.left = `${this.percent(t)}%`;
    const current = this.currentIndex();
    for (const node of this.lane.children) {
      node.classList.toggle("current", Number(node.dataset.index) === current);
    }
    if (!this.video.paused && this.zoom > 1 && !this.drag) this.follow(t);
    for (const listener of this.listeners) listener(t, current);
  }

  // Keep the playhead in view while playing when zoomed in.
  follow(t) {
    const pps = this.pixelsPerSecond();
    const x = t * pps;
    const left = this.scroller.scrollLeft;
    const width = this.scroller.clientWidth;
    if (x < left || x > left + width - 20) this.scroller.scrollLeft = Math.max(0, x - width * 0.1);
  }

  showHover(clientX) {
    if (clientX === null) {
      this.hoverLine.hidden = true;
      this.hoverLabel.hidden = true;
      return;
    }
    const t = this.timeAt(clientX);
    const frame = Math.floor(t * this.fps + 1e-6);
    this.hoverLine.hidden = false;
    this.hoverLabel.hidden = false;
    this.hoverLine.style.left = `${this.percent(t)}%`;
    this.hoverLabel.style.left = `${this.percent(t)}%`;
    this.hoverLabel.textContent = `${t.toFixed(2)} s · frame ${frame}`;
    this.hoverLabel.dataset.time = String(t);
  }

  // ---------------------------------------------------------------- pointer: seek, scrub, retime

  pointerDown(event) {
    if (event.button !== 0) return;
    const handle = event.target.closest(".tl-handle");
    this.track.setPointerCapture(event.pointerId);
    if (handle) {
      event.preventDefault();
      const index = Number(handle.dataset.index);
      this.drag = { kind: "retime", index, edge: handle.dataset.edge, moved: false, before: this.windows.map((w) => ({ ...w })) };
      this.timeline.classList.add("tl-retiming");
      return;
    }
    this.drag = { kind: "scrub" };
    this.video.pause();
    this.seek(this.timeAt(event.clientX));
  }

  pointerMove(event) {
    this.showHover(event.clientX);
    if (!this.drag) return;
    if (this.drag.kind === "scrub") {
      this.seek(this.timeAt(event.clientX));
      return;
    }
    const changes = this.retime(this.drag, this.timeAt(event.clientX), !event.shiftKey);
    if (changes.length) {
      this.drag.moved = true;
      for (const listener of this.retimeListeners) listener(changes, { done: false });
    }
  }

  pointerUp(event) {
    if (!this.drag) return;
    const drag = this.drag;
    this.drag = null;
    this.timeline.classList.remove("tl-retiming");
    if (this.track.hasPointerCapture(event.pointerId)) this.track.releasePointerCapture(event.pointerId);
    if (drag.kind === "retime" && drag.moved) {
      const changes = this.windows
        .map((w, index) => ({ index, start: w.start, end: w.end }))
        .filter(({ index, start, end }) => start !== drag.before[index].start || end !== drag.before[index].end);
      for (const listener of this.retimeListeners) listener(changes, { done: true });
    }
  }

  // ---------------------------------------------------------------- keyboard: retime an edge

  keyDown(event, index, edge) {
    const w = this.windows[index];
    const frame = Math.round(w[edge] * this.fps * 1000) / 1000; // the edge's frame, fractional off-frame
    let t;
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      const direction = event.key === "ArrowRight" ? 1 : -1;
      t = event.shiftKey ? w[edge] + direction
        : (direction > 0 ? Math.floor(frame + 1e-6) + 1 : Math.ceil(frame - 1e-6) - 1) / this.fps;
    } else if (event.key === "Home" || event.key === "End") {
      t = this.bounds(index, edge)[event.key === "Home" ? 0 : 1];
    } else {
      return;
    }
    // The page's own arrow keys (seeking) must not act on the same press.
    event.preventDefault();
    event.stopPropagation();
    const changes = this.retime({ index, edge }, t, false);
    if (changes.length) for (const listener of this.retimeListeners) listener(changes, { done: true });
  }

  // How far an edge can go: up to a frame short of its window's other edge, and not past its
  // neighbour's edge (nor, when linked, past the far edge of the window it shares a boundary with).
  bounds(index, edge, partner = this.partner(index, edge)) {
    const frame = 1 / this.fps;
    const windows = this.windows;
    const w = windows[index];
    if (edge === "start") {
      const low = partner >= 0 ? windows[partner].start + frame : index > 0 ? windows[index - 1].end : 0;
      return [low, w.end - frame];
    }
    const high = partner >= 0 ? windows[partner].end - frame : index + 1 < windows.length ? windows[index + 1].start : this.duration;
    return [w.start + frame, high];
  }

  // Which window shares this boundary (linked windows only), and so moves with it; -1 when none.
  partner(index, edge) {
    const windows = this.windows;
    const w = windows[index];
    if (!this.linked) return -1;
    if (edge === "end") return index + 1 < windows.length && Math.abs(windows[index + 1].start - w.end) < 1e-6 ? index + 1 : -1;
    return index > 0 && Math.abs(windows[index - 1].end - w.start) < 1e-6 ? index - 1 : -1;
  }

  // Move one boundary to (about) `t`; returns the windows whose times changed.
  retime({ index, edge }, t, snapToShots) {
    const pps = this.pixelsPerSecond();
    let time = snapTime(t, { fps: this.fps, shots: snapToShots ? this.shots : [], tolerance: SNAP_PX / pps });
    const windows = this.windows;
    const w = windows[index];
    const partner = this.partner(index, edge);
    const [low, high] = this.bounds(index, edge, partner);
    time = Math.min(Math.max(time, low), high);
    time = Math.round(time * 1000) / 1000;
    if (time === w[edge]) return [];
    const changed = [index];
    w[edge] = time;
    if (partner >= 0) {
      windows[partner][edge === "start" ? "end" : "start"] = time;
      changed.push(partner);
    }
    for (const i of changed) this.placeSegment(this.lane.children[i], windows[i], i);
    return changed.map((i) => ({ index: i, start: windows[i].start, end: windows[i].end }));
  }
}

function formatTick(t, step) {
  const decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
  if (t >= 60 && step >= 1) {
    const minutes = Math.floor(t / 60);
    const rest = Math.round(t - minutes * 60);
    return `${minutes}:${String(rest).padStart(2, "0")}`;
  }
  return `${t.toFixed(decimals)} s`;
}

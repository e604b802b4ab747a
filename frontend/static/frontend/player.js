// A muted video with a timeline of windows under it: segments at their times,
// the current one highlighted, a playhead, and seeking on click.

export class Player {
  constructor({ video, timeline, clock, duration, fps }) {
    this.video = video;
    this.timeline = timeline;
    this.clock = clock;
    this.duration = duration;
    this.fps = fps || 25;
    this.windows = [];
    this.listeners = [];
    this.playhead = document.createElement("div");
    this.playhead.className = "playhead";
    timeline.appendChild(this.playhead);
    video.muted = true;
    timeline.addEventListener("click", (event) => {
      const box = timeline.getBoundingClientRect();
      this.seek(((event.clientX - box.left) / box.width) * this.duration);
    });
    video.addEventListener("timeupdate", () => this.update());
    video.addEventListener("seeked", () => this.update());
  }

  get time() { return this.video.currentTime; }

  seek(seconds) {
    this.video.currentTime = Math.min(Math.max(seconds, 0), this.duration);
    this.update();
  }

  step(frames) {
    this.video.pause();
    this.seek(this.video.currentTime + frames / this.fps);
  }

  toggle() {
    if (this.video.paused) this.video.play(); else this.video.pause();
  }

  setRate(rate) { this.video.playbackRate = rate; }

  // windows: [{start, end}], drawn as segments; onTime(listener) hears about the current index.
  setWindows(windows) {
    this.windows = windows;
    this.timeline.querySelectorAll(".segment").forEach((node) => node.remove());
    windows.forEach((window, index) => {
      const segment = document.createElement("button");
      segment.type = "button";
      segment.className = "segment";
      segment.tabIndex = -1;
      segment.dataset.index = index;
      segment.style.left = `${(100 * window.start) / this.duration}%`;
      segment.style.width = `${(100 * (window.end - window.start)) / this.duration}%`;
      segment.title = `Window ${index + 1}: ${window.start.toFixed(2)}–${window.end.toFixed(2)} s`;
      segment.addEventListener("click", (event) => {
        event.stopPropagation();
        this.seek(window.start);
      });
      this.timeline.appendChild(segment);
    });
    this.update();
  }

  currentIndex() {
    const t = this.video.currentTime;
    return this.windows.findIndex((w) => t >= w.start && t < w.end);
  }

  onTime(listener) { this.listeners.push(listener); }

  update() {
    const t = this.video.currentTime;
    this.playhead.style.left = `${(100 * t) / this.duration}%`;
    if (this.clock) this.clock.textContent = `${t.toFixed(2)} s / ${this.duration.toFixed(2)} s`;
    const current = this.currentIndex();
    this.timeline.querySelectorAll(".segment").forEach((node) => {
      node.classList.toggle("current", Number(node.dataset.index) === current);
    });
    for (const listener of this.listeners) listener(t, current);
  }
}

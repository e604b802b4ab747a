// The workspace's player: a muted video with its timeline (timeline.js) under it, and the
// transport the page's buttons and keys use: play / pause, a frame at a time, speed, a clock.

import { Timeline } from "./timeline.js";

export class Player extends Timeline {
  constructor({ video, timeline, clock, duration, fps, shots = [] }) {
    super({ video, timeline, duration, fps, shots });
    this.clock = clock;
    this.onTime((t) => {
      if (this.clock) this.clock.textContent = `${t.toFixed(2)} s / ${this.duration.toFixed(2)} s`;
    });
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
}

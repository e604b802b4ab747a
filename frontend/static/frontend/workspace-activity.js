// Active time on task and watch telemetry, sent with every save.
//
// Active time counts only while the tab is visible and there was input or
// playback in the last IDLE_MS. Telemetry: which parts of the clip were played
// (merged intervals and their share of the clip), how often the person seeked,
// and how long they played at each speed.

const IDLE_MS = 30000;
const TICK_MS = 1000;

function merge(intervals) {
  const sorted = intervals.filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  const out = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 0.05) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

export class Activity {
  constructor({ video, duration, telemetry, activeSeconds, onTick }) {
    this.video = video;
    this.duration = duration;
    this.onTick = onTick;
    this.total = activeSeconds || 0;
    this.unsent = 0;
    this.lastInput = performance.now();
    this.lastTick = performance.now();
    const before = telemetry || {};
    this.watched = merge((before.watched || []).map(([a, b]) => [Number(a), Number(b)]));
    this.seeks = Number(before.seeks || 0);
    this.speeds = { ...(before.speeds || {}) };
    this.sentTelemetry = JSON.stringify(this.telemetry());
    this.previousTime = null;
    this.quiet = 0;

    for (const type of ["keydown", "pointerdown", "input", "wheel", "pointermove"]) {
      document.addEventListener(type, () => { this.lastInput = performance.now(); }, { capture: true, passive: true });
    }
    video.addEventListener("seeking", () => {
      this.previousTime = null;
      if (this.quiet > 0) this.quiet -= 1;
      else this.seeks += 1;
    });
    video.addEventListener("timeupdate", () => this.sample());
    video.addEventListener("pause", () => { this.sample(); this.previousTime = null; });
    document.addEventListener("visibilitychange", () => { this.lastTick = performance.now(); });
    setInterval(() => this.tick(), TICK_MS);
  }

  // A seek the person did not ask for (looping, restoring the view) is not counted.
  quietly() {
    this.quiet += 1;
  }

  playing() {
    return !this.video.paused && !this.video.ended;
  }

  sample() {
    const t = this.video.currentTime;
    if (!this.playing() || this.video.seeking) return;
    const rate = this.video.playbackRate || 1;
    if (this.previousTime !== null && t >= this.previousTime && t - this.previousTime < 1.5 * rate) {
      this.watched = merge([...this.watched, [this.previousTime, t]]);
    }
    this.previousTime = t;
  }

  tick() {
    const now = performance.now();
    const elapsed = Math.min((now - this.lastTick) / 1000, 5);
    this.lastTick = now;
    if (this.playing()) {
      this.lastInput = Math.max(this.lastInput, now - 1);
      const rate = String(this.video.playbackRate || 1);
      this.speeds[rate] = round((this.speeds[rate] || 0) + elapsed, 1);
    }
    if (document.visibilityState === "visible" && now - this.lastInput < IDLE_MS) {
      this.total += elapsed;
      this.unsent += elapsed;
    }
    this.onTick(this);
  }

  watchedShare() {
    const covered = this.watched.reduce((sum, [a, b]) => sum + (b - a), 0);
    return Math.min(1, covered / this.duration);
  }

  telemetry() {
    return {
      watched_share: round(this.watchedShare(), 3),
      watched: this.watched.map(([a, b]) => [round(a), round(b)]),
      seeks: this.seeks,
      speeds: this.speeds,
    };
  }

  // Adopt what another tab recorded (after a conflict): the union of both.
  absorb(telemetry) {
    if (!telemetry) return;
    this.watched = merge([...this.watched, ...(telemetry.watched || []).map(([a, b]) => [Number(a), Number(b)])]);
    this.seeks = Math.max(this.seeks, Number(telemetry.seeks || 0));
  }

  // What the next save should carry: {changes, pending}.
  extras() {
    const changes = {};
    const telemetry = this.telemetry();
    const text = JSON.stringify(telemetry);
    if (text !== this.sentTelemetry) changes.telemetry = telemetry;
    const seconds = round(this.unsent, 1);
    if (seconds >= 0.1) changes.active_seconds = seconds;
    return { changes, pending: seconds >= 5 || "telemetry" in changes };
  }

  sent(changes) {
    if (changes.telemetry) this.sentTelemetry = JSON.stringify(changes.telemetry);
    if (changes.active_seconds) this.unsent = Math.max(0, this.unsent - changes.active_seconds);
  }
}

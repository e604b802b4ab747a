// The split between video and panel: dragged (or moved with ← → when focused), and
// remembered in localStorage for the next workspace this browser opens.

const KEY = "redline:workspace:split";
const MIN = 0.25;
const MAX = 0.75;

const clamp = (share) => Math.min(Math.max(share, MIN), MAX);

export function readShare(storage = window.localStorage) {
  const share = Number(storage.getItem(KEY));
  return Number.isFinite(share) && share > 0 ? clamp(share) : 0.5;
}

// layout: the grid holding [video, splitter, panel]; splitter: the handle between them.
export function resizableSplit({ layout, splitter, onResize = () => {} }) {
  const apply = (share, remember) => {
    const video = clamp(share);
    layout.style.gridTemplateColumns = `minmax(0, ${video}fr) 12px minmax(0, ${1 - video}fr)`;
    layout.dataset.split = video.toFixed(3);
    splitter.setAttribute("aria-valuenow", String(Math.round(video * 100)));
    if (remember) {
      try { window.localStorage.setItem(KEY, video.toFixed(3)); } catch { /* private mode: not remembered */ }
    }
    onResize(video);
  };
  splitter.setAttribute("aria-valuemin", String(MIN * 100));
  splitter.setAttribute("aria-valuemax", String(MAX * 100));
  apply(readShare(), false);

  const shareAt = (clientX) => {
    const box = layout.getBoundingClientRect();
    return (clientX - box.left - 6) / (box.width - 12);
  };
  splitter.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    event.preventDefault();
    splitter.setPointerCapture(event.pointerId);
    splitter.classList.add("ws-dragging");
  });
  splitter.addEventListener("pointermove", (event) => {
    if (splitter.hasPointerCapture(event.pointerId)) apply(shareAt(event.clientX), false);
  });
  const finish = (event) => {
    if (!splitter.hasPointerCapture(event.pointerId)) return;
    splitter.releasePointerCapture(event.pointerId);
    splitter.classList.remove("ws-dragging");
    apply(shareAt(event.clientX), true);
  };
  splitter.addEventListener("pointerup", finish);
  splitter.addEventListener("pointercancel", finish);
  splitter.addEventListener("keydown", (event) => {
    const step = { ArrowLeft: -0.02, ArrowRight: 0.02 }[event.key];
    if (!step) return;
    event.preventDefault();
    event.stopPropagation(); // the arrows also seek the video; here they move the split
    apply(Number(layout.dataset.split) + step, true);
  });
}

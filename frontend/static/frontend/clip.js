// The clip page: a video, the selected caption, and its windows drawn on a timeline.
// Caption text is untrusted: it is only ever set with textContent.

const data = JSON.parse(document.getElementById("clip-data").textContent);
const video = document.getElementById("video");
const timeline = document.getElementById("timeline");
const playhead = document.getElementById("playhead");
const clock = document.getElementById("clock");
const select = document.getElementById("caption-select");
const captionBox = document.getElementById("caption");

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function seconds(value) {
  return `${value.toFixed(2)} s`;
}

function drawTimeline(caption) {
  timeline.querySelectorAll(".segment").forEach((node) => node.remove());
  for (const window of caption ? caption.windows : []) {
    const segment = element("button", "segment");
    segment.type = "button";
    segment.style.left = `${(100 * window.start) / data.duration}%`;
    segment.style.width = `${(100 * (window.end - window.start)) / data.duration}%`;
    segment.dataset.index = window.index;
    segment.title = `Window ${window.index + 1}: ${seconds(window.start)} – ${seconds(window.end)}`;
    segment.addEventListener("click", (event) => {
      event.stopPropagation();
      video.currentTime = window.start;
    });
    timeline.appendChild(segment);
  }
}

function showCaption(caption) {
  captionBox.replaceChildren();
  if (!caption) {
    captionBox.appendChild(element("p", "muted", "No captions for this clip yet."));
    return;
  }
  if (caption.invalid_kept) {
    const warning = element("p", "badge warn", "Kept although it failed validation: ");
    warning.appendChild(document.createTextNode(caption.validation_errors.join("; ")));
    captionBox.appendChild(warning);
  }
  captionBox.appendChild(element("h2", null, "Overview"));
  captionBox.appendChild(element("p", "overview", caption.overview));
  captionBox.appendChild(element("h2", null, `Timeline (${caption.windows.length} windows)`));
  const list = element("ol", "windows");
  for (const window of caption.windows) {
    const item = element("li", "window");
    item.dataset.index = window.index;
    item.appendChild(element("span", "span", `${seconds(window.start)} – ${seconds(window.end)}`));
    item.appendChild(element("p", "scene", window.scene));
    item.appendChild(element("p", "shot", window.shot));
    item.addEventListener("click", () => { video.currentTime = window.start; });
    list.appendChild(item);
  }
  captionBox.appendChild(list);
  drawTimeline(caption);
}

function currentCaption() {
  return data.captions[Number(select.value || 0)];
}

function onTime() {
  const t = video.currentTime;
  playhead.style.left = `${(100 * t) / data.duration}%`;
  clock.textContent = `${seconds(t)} / ${seconds(data.duration)}`;
  const caption = currentCaption();
  for (const node of document.querySelectorAll("[data-index]")) {
    const window = caption && caption.windows[Number(node.dataset.index)];
    node.classList.toggle("current", Boolean(window && t >= window.start && t < window.end));
  }
}

timeline.addEventListener("click", (event) => {
  const box = timeline.getBoundingClientRect();
  video.currentTime = ((event.clientX - box.left) / box.width) * data.duration;
});
video.addEventListener("timeupdate", onTime);
video.addEventListener("seeked", onTime);
select.addEventListener("change", () => { showCaption(currentCaption()); onTime(); });
showCaption(currentCaption());

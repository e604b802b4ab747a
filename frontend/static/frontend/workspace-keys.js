// The workspace's keyboard shortcuts: one table drives both the key handling and
// the help overlay. Plain keys never fire while the person types in a text field;
// there the same keys work with Alt, and Ctrl+Enter / Ctrl+S / Esc always work.

import { h, kbd } from "./workspace-dom.js";

export const SHORTCUTS = [
  { group: "Video", keys: [["Space"], ["K"]], label: "Play / pause", action: "play" },
  { group: "Video", keys: [[","]], label: "One frame back", action: "frameBack" },
  { group: "Video", keys: [["."]], label: "One frame forward", action: "frameForward" },
  { group: "Video", keys: [["J"], ["←"]], label: "Back 5 s", action: "back5" },
  { group: "Video", keys: [["L"], ["→"]], label: "Forward 5 s", action: "forward5" },
  { group: "Video", keys: [["["], ["]"]], label: "Slower / faster (0.25× – 2×)", action: "slower" },
  { group: "Video", keys: [["O"]], label: "Loop the current window on / off", action: "loop" },
  { group: "Judge", keys: [["A"]], label: "Accept (in the window pass, then go to the next)", action: "accept" },
  { group: "Judge", keys: [["R"]], label: "Reject and edit (puts you in the editor)", action: "reject" },
  { group: "Judge", keys: [["1"], ["6"]], joiner: "–", label: "Toggle failure mode 1–6 (numbers as listed)", action: "mode" },
  { group: "Judge", keys: [["N"], ["P"]], label: "Next / previous window (overview pass: seek to it)", action: "next" },
  { group: "Timeline", keys: [["Click"]], label: "Seek to the time clicked (the time under the pointer shows as you hover)", action: "seek" },
  { group: "Timeline", keys: [["Drag"]], label: "Scrub: the video follows the pointer", action: "scrub" },
  { group: "Timeline", keys: [["="], ["-"]], label: "Zoom in / out (Ctrl + wheel too); frames get ticks when zoomed in", action: "zoomIn" },
  { group: "Timeline", keys: [["0"]], label: "Show the whole clip", action: "zoomFit" },
  { group: "Timeline", keys: [["Drag edge"]], label: "Retime an editable window (a rejected window; the corrected windows of the segmentation): whole frames, snapping to shot changes (orange marks)", action: "retime" },
  { group: "Timeline", keys: [["Shift", "Drag edge"]], label: "Retime without snapping to shot changes", action: "retimeFree" },
  { group: "Edit", keys: [["S"], ["E"]], label: "Set start / end from the playhead", action: "setStart" },
  { group: "Edit", keys: [["M"]], label: "Segmentation: merge the selected window with the next", action: "merge" },
  { group: "Edit", keys: [["X"]], label: "Segmentation: split the window under the playhead", action: "split" },
  { group: "Work", keys: [["Ctrl", "Enter"]], label: "Submit the overview verdict / submit to QC", action: "submit" },
  { group: "Work", keys: [["U"], ["Ctrl", "Z"]], label: "Undo locking the overview or submitting, while the Undo notice shows (a few seconds; until then nobody else sees it)", action: "undo" },
  { group: "Work", keys: [["Ctrl", "S"]], label: "Save now (work also saves by itself)", action: "save" },
  { group: "Work", keys: [["Esc"]], label: "Leave the text field; close this help", action: "escape" },
  { group: "Work", keys: [["G"]], label: "Show or hide the study's guidelines and failure-mode examples (side panel)", action: "guidelines" },
  { group: "Work", keys: [["?"]], label: "Show or hide these shortcuts", action: "help" },
];

const PLAIN = {
  " ": "play", k: "play", ",": "frameBack", ".": "frameForward", j: "back5", l: "forward5",
  arrowleft: "back5", arrowright: "forward5", "[": "slower", "]": "faster", o: "loop",
  a: "accept", r: "reject", n: "next", p: "previous", s: "setStart", e: "setEnd",
  m: "merge", x: "split", g: "guidelines", "?": "help", "=": "zoomIn", "+": "zoomIn", "-": "zoomOut", 0: "zoomFit",
};

const CODES = { Space: " ", Comma: ",", Period: ".", BracketLeft: "[", BracketRight: "]", Minus: "-", Equal: "=" };

function fromCode(code) {
  if (code.startsWith("Key")) return code.slice(3).toLowerCase();
  if (code.startsWith("Digit")) return code.slice(5);
  return CODES[code] || null;
}

export function isTyping(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable || target.tagName === "TEXTAREA") return true;
  if (target.tagName !== "INPUT") return false;
  return !["checkbox", "radio", "button", "submit", "reset", "range", "file", "color"].includes(target.type);
}

// The action a key press asks for, as {action, mode?}, or null.
export function actionFor(event) {
  const control = event.ctrlKey || event.metaKey;
  if (control && event.key === "Enter") return { action: "submit" };
  if (control && event.key.toLowerCase() === "s") return { action: "save" };
  if (event.key === "Escape") return { action: "escape" };
  if (control) return null;
  let key;
  if (event.altKey) key = fromCode(event.code);
  else if (isTyping(event.target)) return null;
  else key = event.key.toLowerCase();
  if (!key) return null;
  if (/^[1-9]$/.test(key)) return { action: "mode", mode: Number(key) };
  const action = PLAIN[key];
  return action ? { action } : null;
}

export function renderHelp(container) {
  const groups = new Map();
  for (const shortcut of SHORTCUTS) {
    if (!groups.has(shortcut.group)) groups.set(shortcut.group, []);
    groups.get(shortcut.group).push(shortcut);
  }
  container.replaceChildren(
    ...[...groups].map(([group, shortcuts]) =>
      h("table", { class: "ws-keys" },
        h("caption", { text: group }),
        h("tbody", null, shortcuts.map((shortcut) =>
          h("tr", null,
            h("th", { scope: "row" }, shortcut.keys.map((combo, i) =>
              [i ? ` ${shortcut.joiner || "/"} ` : "", kbd(...combo)])),
            h("td", { text: shortcut.label })),
        )),
      ),
    ),
  );
}

// Reads {"pairs": [[original, corrected], ...], "sessions": [[original, [text, ...]], ...]} as
// JSON on stdin and writes JSON lines on stdout: for each pair what edits.js computes (edit size,
// word redline, live size), then for each session the live size after each text in turn, as
// while someone types (liveEditSize reuses work between calls with the same original).
import { readFileSync } from "node:fs";
import { editSize, liveEditSize, wordDiff } from "../../../frontend/static/frontend/edits.js";

const { pairs, sessions = [] } = JSON.parse(readFileSync(0, "utf8"));
const finite = (x) => (Number.isFinite(x) ? x : String(x));
const live = (original, corrected) => {
  const size = liveEditSize(original, corrected);
  return { words_changed: size.words_changed, char_similarity: size.char_similarity, near_total: size.near_total, diff: size.diff };
};
const lines = pairs.map(([original, corrected]) => {
  const size = editSize(original, corrected);
  return JSON.stringify({
    size: { ...size, length_change: finite(size.length_change) },
    diff: wordDiff(original, corrected),
    live: live(original, corrected),
  });
});
for (const [original, texts] of sessions) {
  lines.push(JSON.stringify(texts.map((text) => live(original, text))));
}
process.stdout.write(lines.join("\n") + "\n");

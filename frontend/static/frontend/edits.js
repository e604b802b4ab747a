// Edit size and word redline in the browser: the same numbers as the server's scoring.metrics.edits,
// so the workspace can show them on every keystroke, offline too. The server stays the
// authority for what is stored; tests/frontend/test_edits_parity.py runs both on the same pairs.
//
// Tokenisation (as scoring/metrics/edits.py):
// - words: the NFC-normalised text split on whitespace, compared exactly (case and punctuation kept);
// - characters: NFC, whitespace runs collapsed to one space, ends stripped; counted in code points
//   (as Python counts them), never in UTF-16 units.
// Alignment is rapidfuzz's: common prefix and suffix removed, Hyyrö's bit-parallel Levenshtein
// matrix, and the same walk back from the end, so ties are broken the same way.
// Pure module: no DOM, no imports.

export const NEAR_TOTAL_CUT = 0.55;
export const LENGTH_BAND = 0.05;

// Python's whitespace (str.isspace, and `\s` in its regular expressions). JavaScript's `\s` differs:
// it adds U+FEFF and lacks U+001C–U+001F and U+0085.
const WS = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const WHITESPACE_RUN = new RegExp(`[${WS}]+`, "g");
const WORD = new RegExp(`[^${WS}]+`, "g");
const SPACED_WORD = new RegExp(`([${WS}]*)([^${WS}]+)`, "g");
const EDGES = new RegExp(`^[${WS}]+|[${WS}]+$`, "g");

/** The text NFC-normalised, whitespace runs collapsed to one space, ends stripped. */
export function normaliseText(text) {
  return text.normalize("NFC").replace(WHITESPACE_RUN, " ").replace(EDGES, "");
}

/** The words of the text: NFC-normalised, whitespace-separated, exact. */
export function words(text) {
  return text.normalize("NFC").match(WORD) || [];
}

// Code points of a string as integers (Python indexes strings by code point).
function codePoints(text) {
  const out = [];
  for (const ch of text) out.push(ch.codePointAt(0));
  return out;
}

// Turn two sequences of strings into sequences of small integers, equal iff the strings are.
function intern(a, b) {
  const ids = new Map();
  const map = (list) => list.map((item) => {
    let id = ids.get(item);
    if (id === undefined) { id = ids.size; ids.set(item, id); }
    return id;
  });
  return [map(a), map(b)];
}

function commonAffix(a, b) {
  let prefix = 0;
  const shorter = Math.min(a.length, b.length);
  while (prefix < shorter && a[prefix] === b[prefix]) prefix += 1;
  let suffix = 0;
  while (suffix < shorter - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix += 1;
  return [prefix, suffix];
}

// Hyyrö's bit-parallel Levenshtein (2003), block version. s1 is the pattern (bits), s2 the rows.
// With `record`, keeps every row's VP/VN so that the alignment can be walked back. Int32Array
// throughout: the same bits as unsigned words, without the engine boxing values over 2^31.
function hyrroe(s1, s2, record) {
  const len1 = s1.length;
  const blocks = (len1 + 31) >>> 5;
  const { masks, offsets } = flatMasks(s1, s2, blocks);
  const VP = new Int32Array(blocks).fill(-1);
  const VN = new Int32Array(blocks);
  const last = 1 << ((len1 - 1) & 31);
  const matrixVP = record ? new Int32Array(blocks * s2.length) : null;
  const matrixVN = record ? new Int32Array(blocks * s2.length) : null;
  let dist = len1;
  for (let row = 0; row < s2.length; row += 1) {
    const offset = offsets[row];
    let hpCarry = 1;
    let hnCarry = 0;
    for (let word = 0; word < blocks; word += 1) {
      const vp = VP[word];
      const vn = VN[word];
      const X = masks[offset + word] | hnCarry;
      const D0 = (((X & vp) + vp) ^ vp) | X | vn;
      let HP = vn | ~(D0 | vp);
      let HN = D0 & vp;
      const hpIn = hpCarry;
      const hnIn = hnCarry;
      if (word < blocks - 1) {
        hpCarry = HP >>> 31;
        hnCarry = HN >>> 31;
      } else {
        hpCarry = (HP & last) !== 0 ? 1 : 0;
        hnCarry = (HN & last) !== 0 ? 1 : 0;
      }
      HP = (HP << 1) | hpIn;
      HN = (HN << 1) | hnIn;
      VP[word] = HN | ~(D0 | HP);
      VN[word] = HP & D0;
    }
    dist += hpCarry - hnCarry;
    if (record) {
      matrixVP.set(VP, row * blocks);
      matrixVN.set(VN, row * blocks);
    }
  }
  return { dist, blocks, matrixVP, matrixVN };
}

function levenshteinDistance(a, b) {
  const [prefix, suffix] = commonAffix(a, b);
  const s1 = a.slice(prefix, a.length - suffix);
  const s2 = b.slice(prefix, b.length - suffix);
  if (!s1.length || !s2.length) return s1.length + s2.length;
  return hyrroe(s1, s2, false).dist;
}

/**
 * Levenshtein edit operations turning a into b, as rapidfuzz's Levenshtein.opcodes lists them:
 * [{tag, srcStart, srcEnd, destStart, destEnd}], tags 'equal', 'replace', 'insert', 'delete'.
 */
export function opcodes(a, b) {
  const [prefix, suffix] = commonAffix(a, b);
  const s1 = a.slice(prefix, a.length - suffix);
  const s2 = b.slice(prefix, b.length - suffix);
  const editops = [];
  if (s1.length && s2.length) {
    const { dist, blocks, matrixVP, matrixVN } = hyrroe(s1, s2, true);
    const bit = (matrix, row, col) => (matrix[row * blocks + (col >>> 5)] >>> (col & 31)) & 1;
    let remaining = dist;
    let col = s1.length;
    let row = s2.length;
    editops.length = dist;
    const put = (tag, c, r) => { remaining -= 1; editops[remaining] = [tag, c + prefix, r + prefix]; };
    while (row && col) {
      if (bit(matrixVP, row - 1, col - 1)) {
        col -= 1;
        put("delete", col, row);
      } else {
        row -= 1;
        if (row && bit(matrixVN, row - 1, col - 1)) {
          put("insert", col, row);
        } else {
          col -= 1;
          if (s1[col] !== s2[row]) put("replace", col, row);
        }
      }
    }
    while (col) { col -= 1; put("delete", col, row); }
    while (row) { row -= 1; put("insert", col, row); }
  } else {
    for (let col = 0; col < s1.length; col += 1) editops.push(["delete", col + prefix, prefix]);
    for (let row = 0; row < s2.length; row += 1) editops.push(["insert", prefix + s1.length, row + prefix]);
  }
  return editopsToOpcodes(editops, a.length, b.length);
}

// rapidfuzz's Editops -> Opcodes: runs of one tag become one opcode, gaps become 'equal'.
function editopsToOpcodes(editops, srcLen, destLen) {
  const result = [];
  let src = 0;
  let dest = 0;
  let i = 0;
  while (i < editops.length) {
    const [, opSrc, opDest] = editops[i];
    if (src < opSrc || dest < opDest) {
      result.push({ tag: "equal", srcStart: src, srcEnd: opSrc, destStart: dest, destEnd: opDest });
      src = opSrc;
      dest = opDest;
    }
    const tag = editops[i][0];
    const srcStart = src;
    const destStart = dest;
    while (i < editops.length && editops[i][0] === tag && editops[i][1] === src && editops[i][2] === dest) {
      if (tag === "replace") { src += 1; dest += 1; } else if (tag === "delete") src += 1; else dest += 1;
      i += 1;
    }
    result.push({ tag, srcStart, srcEnd: src, destStart, destEnd: dest });
  }
  if (src < srcLen || dest < destLen) {
    result.push({ tag: "equal", srcStart: src, srcEnd: srcLen, destStart: dest, destEnd: destLen });
  }
  return result;
}

// Aligned runs: equal words, or one merged run of non-equal operations (costing its longer side).
function blocksOf(src, dst) {
  const [a, b] = intern(src, dst);
  const blocks = [];
  for (const op of opcodes(a, b)) {
    const equal = op.tag === "equal";
    const previous = blocks[blocks.length - 1];
    if (previous && !equal && !previous.equal) {
      previous.srcEnd = op.srcEnd;
      previous.dstEnd = op.destEnd;
    } else {
      blocks.push({ equal, srcStart: op.srcStart, srcEnd: op.srcEnd, dstStart: op.destStart, dstEnd: op.destEnd });
    }
  }
  return blocks;
}

const blockCost = (block) => (block.equal ? 0 : Math.max(block.srcEnd - block.srcStart, block.dstEnd - block.dstStart));

/** Words the correction changed; replacements count at the longer side (= word Levenshtein). */
export function wordsChanged(original, corrected) {
  return levenshteinDistance(...intern(words(original), words(corrected)));
}

// Where each symbol of `pattern` occurs, as one flat array of 32-bit blocks per distinct symbol,
// and for each symbol of `text` the offset of its row (the all-zero row when absent).
function flatMasks(pattern, text, blocks) {
  const rowOf = new Map();
  pattern.forEach((symbol) => { if (!rowOf.has(symbol)) rowOf.set(symbol, rowOf.size + 1); });
  const masks = new Int32Array((rowOf.size + 1) * blocks);
  pattern.forEach((symbol, position) => {
    masks[rowOf.get(symbol) * blocks + (position >>> 5)] |= 1 << (position & 31);
  });
  const offsets = new Int32Array(text.length);
  text.forEach((symbol, i) => { offsets[i] = (rowOf.get(symbol) || 0) * blocks; });
  return { masks, offsets };
}

// Length of the longest common subsequence, bit-parallel (Hyyrö 2004), 32 positions to a block.
// Why the flat arrays: this runs on every keystroke over paragraphs of 10,000+ characters.
function lcsLength(a, b) {
  const [prefix, suffix] = commonAffix(a, b);
  const s1 = a.slice(prefix, a.length - suffix);
  const s2 = b.slice(prefix, b.length - suffix);
  if (!s1.length || !s2.length) return prefix + suffix;
  const blocks = (s1.length + 31) >>> 5;
  const { masks, offsets } = flatMasks(s1, s2, blocks);
  const S = new Int32Array(blocks).fill(-1);
  for (let row = 0; row < s2.length; row += 1) {
    const offset = offsets[row];
    if (offset === 0) continue; // a symbol absent from s1 changes nothing
    let carry = 0;
    for (let word = 0; word < blocks; word += 1) {
      // 32-bit add with carry in integer operations only (no doubles): the hot loop.
      const s = S[word] | 0;
      const u = s & masks[offset + word];
      const sum = (s + u + carry) | 0;
      carry = ((s & u) | ((s | u) & ~sum)) >>> 31;
      S[word] = sum | (s - u);
    }
  }
  let ones = 0;
  for (let word = 0; word < blocks; word += 1) {
    let x = S[word];
    if (word === blocks - 1 && (s1.length & 31)) x &= (1 << (s1.length & 31)) - 1;
    x -= (x >>> 1) & 0x55555555;
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    ones += (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  return prefix + suffix + (s1.length - ones);
}

// One row of Hyyrö's LCS over `state` (32 positions of the pattern to a block).
function lcsRow(state, masks, offset, blocks) {
  let carry = 0;
  for (let word = 0; word < blocks; word += 1) {
    const s = state[word];
    const u = s & masks[offset + word];
    const sum = (s + u + carry) | 0;
    carry = ((s & u) | ((s | u) & ~sum)) >>> 31;
    state[word] = sum | (s - u);
  }
}

// For each j in 0..n, how many zero bits `state` has among its first j: LCS(pattern[:j], rows).
function prefixZeros(state, n) {
  const zeros = new Int32Array(n + 1);
  for (let j = 0; j < n; j += 1) {
    zeros[j + 1] = zeros[j] + (((state[j >>> 5] >>> (j & 31)) & 1) ^ 1);
  }
  return zeros;
}

const CHECKPOINT = 64;

/**
 * LCS against one fixed text, cheap when the other text changes in one place, as while typing.
 * Keeps the bit-parallel state every CHECKPOINT rows, from the start and from the end of the
 * last text; a new text reuses the states of its unchanged start and end, computes only the
 * rows in between, and joins the two halves exactly: LCS(a, b) = max over j of
 * LCS(a[:j], b[:i]) + LCS(a[j:], b[i:]).
 */
export class TypingLcs {
  constructor(fixed) {
    this.a = fixed;
    this.n = fixed.length;
    this.blocks = Math.max(1, (this.n + 31) >>> 5);
    this.forwardMasks = this.masksFor(fixed);
    this.backwardMasks = this.masksFor([...fixed].reverse());
    this.previous = [];
    this.forward = [new Int32Array(this.blocks).fill(-1)];
    this.backward = [new Int32Array(this.blocks).fill(-1)];
  }

  masksFor(pattern) {
    const rowOf = new Map();
    pattern.forEach((symbol) => { if (!rowOf.has(symbol)) rowOf.set(symbol, rowOf.size + 1); });
    const masks = new Int32Array((rowOf.size + 1) * this.blocks);
    pattern.forEach((symbol, position) => {
      masks[rowOf.get(symbol) * this.blocks + (position >>> 5)] |= 1 << (position & 31);
    });
    return { masks, offset: (symbol) => (rowOf.get(symbol) || 0) * this.blocks };
  }

  // Run rows from checkpoint `from` to row `to` (rows: a function giving the i-th symbol),
  // storing a checkpoint at every multiple of CHECKPOINT on the way.
  run(checkpoints, { masks, offset }, rows, to) {
    const start = (checkpoints.length - 1) * CHECKPOINT;
    const state = Int32Array.from(checkpoints[checkpoints.length - 1]);
    for (let row = start; row < to; row += 1) {
      const at = offset(rows(row));
      if (at) lcsRow(state, masks, at, this.blocks);
      if ((row + 1) % CHECKPOINT === 0) checkpoints.push(Int32Array.from(state));
    }
    return state;
  }

  /** LCS of the fixed text and `b` (arrays of code points). */
  lcs(b) {
    const [prefix, suffix] = commonAffix(this.previous, b);
    this.forward.length = Math.min(this.forward.length, Math.floor(prefix / CHECKPOINT) + 1);
    this.backward.length = Math.min(this.backward.length, Math.floor(suffix / CHECKPOINT) + 1);
    this.previous = b;
    const m = b.length;
    const split = Math.min(prefix, m);
    const front = this.run(this.forward, this.forwardMasks, (row) => b[row], split);
    const back = this.run(this.backward, this.backwardMasks, (row) => b[m - 1 - row], m - split);
    const frontZeros = prefixZeros(front, this.n);
    const backZeros = prefixZeros(back, this.n);
    let best = 0;
    for (let j = 0; j <= this.n; j += 1) best = Math.max(best, frontZeros[j] + backZeros[this.n - j]);
    return best;
  }
}

const typingCaches = new Map();

// The LCS through a TypingLcs kept per original text (the few texts of one page).
function typingLcsLength(originalText, original, corrected) {
  let cache = typingCaches.get(originalText);
  if (!cache) {
    if (typingCaches.size >= 16) typingCaches.delete(typingCaches.keys().next().value);
    cache = new TypingLcs(original);
    typingCaches.set(originalText, cache);
  }
  return cache.lcs(corrected);
}

// fuzz.ratio(a, b) / 100 on code-point arrays, with rapidfuzz's floating-point steps.
function indelSimilarity(a, b, lcs = lcsLength(a, b)) {
  const total = a.length + b.length;
  const distance = total - 2 * lcs;
  const normalised = total ? distance / total : 0;
  return ((1 - normalised) * 100) / 100;
}

/** Normalised Indel similarity 2·LCS/(|a|+|b|) of the normalised texts (two empty texts: 1). */
export function charSimilarity(original, corrected) {
  return indelSimilarity(codePoints(normaliseText(original)), codePoints(normaliseText(corrected)));
}

/** Character Levenshtein distance between the two normalised texts. */
export function charsChanged(original, corrected) {
  return levenshteinDistance(codePoints(normaliseText(original)), codePoints(normaliseText(corrected)));
}

/** True when a repair with this similarity is near-total (below the cut). */
export function nearTotal(similarity, cut = NEAR_TOTAL_CUT) {
  return similarity < cut;
}

function relativeChange(before, after) {
  if (before === 0) return after === 0 ? 0 : Infinity;
  return (after - before) / before;
}

/** (|corrected| - |original|) / |original| in code points of the normalised texts. */
export function lengthChange(original, corrected) {
  return relativeChange(codePoints(normaliseText(original)).length, codePoints(normaliseText(corrected)).length);
}

/** 'lengthened' beyond +band, 'shortened' below -band, else 'same'. */
export function repairDirection(change, band = LENGTH_BAND) {
  if (band < 0) throw new RangeError(`band must be >= 0, got ${band}`);
  if (change > band) return "lengthened";
  if (change < -band) return "shortened";
  return "same";
}

/** Every edit-size measure at once, field for field as scoring.metrics.edits.edit_size. */
export function editSize(original, corrected, { nearTotalCut = NEAR_TOTAL_CUT, band = LENGTH_BAND } = {}) {
  const originalWords = words(original);
  const correctedWords = words(corrected);
  const before = codePoints(normaliseText(original));
  const after = codePoints(normaliseText(corrected));
  const similarity = indelSimilarity(before, after);
  const change = relativeChange(before.length, after.length);
  return {
    words_changed: levenshteinDistance(...intern(originalWords, correctedWords)),
    original_words: originalWords.length,
    corrected_words: correctedWords.length,
    char_similarity: similarity,
    chars_changed: levenshteinDistance(before, after),
    near_total: nearTotal(similarity, nearTotalCut),
    length_change: change,
    direction: repairDirection(change, band),
  };
}

const spacedCache = new Map();

// (preceding whitespace, word) pairs of the NFC text. The originals' are kept (a page has a
// few, compared again on every keystroke); callers never modify the result.
function spacedWords(text, keep = false) {
  const kept = spacedCache.get(text);
  if (kept) return kept;
  const pairs = Array.from(text.normalize("NFC").matchAll(SPACED_WORD), (m) => [m[1], m[2]]);
  if (keep) {
    if (spacedCache.size >= 16) spacedCache.delete(spacedCache.keys().next().value);
    spacedCache.set(text, pairs);
  }
  return pairs;
}

// The redline segments and the words changed, from one alignment.
function redline(original, corrected) {
  const src = spacedWords(original, true);
  const dst = spacedWords(corrected);
  const segments = [];
  let cost = 0;
  let emitted = false;
  const render = (pieces) => {
    let text = "";
    for (const [space, word] of pieces) {
      if (emitted) text += space || " ";
      text += word;
      emitted = true;
    }
    return text;
  };
  const add = (op, pieces) => {
    if (!pieces.length) return;
    const text = render(pieces);
    const previous = segments[segments.length - 1];
    if (previous && previous.op === op) previous.text += text;
    else segments.push({ op, text });
  };
  for (const block of blocksOf(src.map((p) => p[1]), dst.map((p) => p[1]))) {
    cost += blockCost(block);
    if (block.equal) {
      add("equal", dst.slice(block.dstStart, block.dstEnd));
    } else {
      add("delete", src.slice(block.srcStart, block.srcEnd));
      add("insert", dst.slice(block.dstStart, block.dstEnd));
    }
  }
  return { segments, cost };
}

/**
 * The word-level redline turning original into corrected: [{op, text}] with op 'equal', 'insert'
 * or 'delete', exactly as scoring.metrics.edits.word_diff returns it.
 */
export function wordDiff(original, corrected) {
  return redline(original, corrected).segments;
}

/**
 * What the workspace shows while someone types: the redline, words changed, character
 * similarity and whether it is a near-total rewrite (the fields /api/edit-size/ returns for these).
 * Repeated calls with the same original reuse work (see TypingLcs).
 */
export function liveEditSize(original, corrected, nearTotalCut = NEAR_TOTAL_CUT) {
  const { segments, cost } = redline(original, corrected);
  const before = normaliseText(original);
  const a = codePoints(before);
  const b = codePoints(normaliseText(corrected));
  const similarity = indelSimilarity(a, b, typingLcsLength(before, a, b));
  return {
    words_changed: cost,
    char_similarity: similarity,
    near_total: nearTotal(similarity, nearTotalCut),
    diff: segments,
  };
}

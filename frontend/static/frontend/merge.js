// Three-way merge of the workspace's units: a save refused as stale (someone saved in between)
// is merged against the version both sides started from. What only one side changed is taken
// from that side; texts changed by both are merged word by word when the changed stretches do
// not overlap; failure modes merge as sets. Only a true overlap is a conflict, for the person
// to decide. Pure: no DOM, tested under Node (tests/js/merge.test.js).
//
// The merge runs in the page because only the page knows the version its edits started from;
// the result is saved like any edit, against the server's current version, so the server stays
// the judge of what is stored (another save in between is refused and merged again).

const TEXT_FIELDS = new Set(["text", "scene", "shot"]);

const tokens = (text) => text.match(/\s+|[^\s]+/g) || [];
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// The changes from `base` to `other` as hunks {from, to, insert}: base tokens [from, to) become `insert`.
function hunks(base, other) {
  let start = 0;
  while (start < base.length && start < other.length && base[start] === other[start]) start += 1;
  let endBase = base.length;
  let endOther = other.length;
  while (endBase > start && endOther > start && base[endBase - 1] === other[endOther - 1]) {
    endBase -= 1;
    endOther -= 1;
  }
  const a = base.slice(start, endBase);
  const b = other.slice(start, endOther);
  // Longest common subsequence of the middle, table from the end.
  const lcs = Array.from({ length: a.length + 1 }, () => new Int32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  let open = null;
  const close = () => { if (open) out.push(open); open = null; };
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      close();
      i += 1;
      j += 1;
    } else if (j < b.length && (i === a.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
      open ||= { from: start + i, to: start + i, insert: [] };
      open.insert.push(b[j]);
      j += 1;
    } else {
      open ||= { from: start + i, to: start + i, insert: [] };
      open.to = start + i + 1;
      i += 1;
    }
  }
  close();
  return out;
}

// Do two hunks touch the same stretch of the base? Two insertions at one place do; an
// insertion touches a replaced stretch anywhere from its start to its end.
function overlaps(x, y) {
  const xInserts = x.from === x.to;
  const yInserts = y.from === y.to;
  if (xInserts && yInserts) return x.from === y.from;
  if (xInserts) return y.from <= x.from && x.from <= y.to;
  if (yInserts) return x.from <= y.from && y.from <= x.to;
  return x.from < y.to && y.from < x.to;
}

/**
 * Merge two edits of one text. Returns {text, conflict}: conflict is true (and text is null)
 * when both changed an overlapping stretch differently.
 */
export function mergeText(base, mine, theirs) {
  if (mine === theirs || theirs === base) return { text: mine, conflict: false };
  if (mine === base) return { text: theirs, conflict: false };
  const original = tokens(base);
  const ours = hunks(original, tokens(mine));
  const others = hunks(original, tokens(theirs));
  for (const x of ours) {
    for (const y of others) {
      if (overlaps(x, y) && !(x.from === y.from && x.to === y.to && same(x.insert, y.insert))) {
        return { text: null, conflict: true };
      }
    }
  }
  const all = [...ours, ...others.filter((y) => !ours.some((x) => x.from === y.from && x.to === y.to))]
    .sort((x, y) => x.from - y.from || x.to - y.to);
  const out = [];
  let at = 0;
  for (const hunk of all) {
    out.push(...original.slice(at, hunk.from), ...hunk.insert);
    at = hunk.to;
  }
  out.push(...original.slice(at));
  return { text: out.join(""), conflict: false };
}

// Failure modes as sets: what either side added is in, what either side removed is out.
export function mergeModes(base, mine, theirs, order) {
  const added = [...mine, ...theirs].filter((m) => !base.includes(m));
  const removed = new Set([...base.filter((m) => !mine.includes(m)), ...base.filter((m) => !theirs.includes(m))]);
  const merged = new Set([...base.filter((m) => !removed.has(m)), ...added]);
  return order ? order.filter((m) => merged.has(m)) : [...merged];
}

/**
 * Merge one unit (overview, window or segmentation, as normalised by workspace-units.js).
 * Returns {value, conflict, fields}: `fields` names the fields that both sides changed and
 * that were merged. Different verdicts on the two sides are a conflict.
 */
export function mergeUnit(base, mine, theirs, { modeOrder } = {}) {
  if (same(mine, theirs) || same(theirs, base)) return { value: mine, conflict: false, fields: [] };
  if (same(mine, base)) return { value: theirs, conflict: false, fields: [] };
  // Both sides changed the unit. Different verdicts cannot both hold (an accept and an edit
  // of the rejection, say): that is the person's call.
  if (mine.verdict !== theirs.verdict) return { value: null, conflict: true, fields: [] };
  const value = { ...base };
  const fields = [];
  for (const field of Object.keys(base)) {
    const [b, m, t] = [base[field], mine[field], theirs[field]];
    if (same(m, t) || same(t, b)) value[field] = m;
    else if (same(m, b)) value[field] = t;
    else if (TEXT_FIELDS.has(field) && typeof b === "string") {
      const merged = mergeText(b, m, t);
      if (merged.conflict) return { value: null, conflict: true, fields: [] };
      value[field] = merged.text;
      fields.push(field);
    } else if (field === "modes") {
      value[field] = mergeModes(b, m, t, modeOrder);
      fields.push(field);
    } else {
      return { value: null, conflict: true, fields: [] };
    }
  }
  return { value, conflict: false, fields };
}

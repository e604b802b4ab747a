// A study's settings checked in the browser, field by field, with the server's rules
// (annotation/rules/study_settings.py); the server checks again and is the last guard. Pure: no DOM.

export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

// The slug suggested for a name: ASCII letters and digits in lowercase, words joined by hyphens.
export function slugSuggest(name, max = 60) {
  const ascii = String(name).normalize("NFKD").replace(/[\u0080-\uffff]/g, "");
  return ascii.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, max).replace(/-+$/, "");
}

export function slugProblem(slug, limits) {
  if (!slug) return "Give the study a slug: the short name in its web address.";
  if (slug.length < limits.slug_min || slug.length > limits.slug_max) {
    return `A slug is ${limits.slug_min} to ${limits.slug_max} characters long; this one has ${slug.length}.`;
  }
  if (!SLUG_PATTERN.test(slug)) {
    return `A slug holds lowercase letters, digits and single hyphens between them (such as walk-study); '${slug}' does not.`;
  }
  if ((limits.reserved_slugs || []).includes(slug)) return `'${slug}' is the name of a page; choose another slug.`;
  return null;
}

// "1, 3, 6, 16" -> {value: [1, 3, 6, 16]} or {problem}.
export function parseThresholds(text, limits) {
  const parts = String(text).split(/[\s,;]+/).filter(Boolean);
  if (!parts.length) return { problem: "Give at least one word threshold, e.g. 1, 3, 6, 16." };
  if (parts.length > limits.thresholds_max_count) {
    return { problem: `At most ${limits.thresholds_max_count} word thresholds; there are ${parts.length}.` };
  }
  const numbers = [];
  for (const part of parts) {
    if (!/^\d+$/.test(part)) return { problem: `Word thresholds are whole numbers of words; '${part}' is not.` };
    const number = Number(part);
    if (number < 1 || number > limits.threshold_max_words) {
      return { problem: `A word threshold is from 1 to ${limits.threshold_max_words} words; ${number} is not.` };
    }
    const before = numbers[numbers.length - 1];
    if (before !== undefined && number <= before) {
      return { problem: `Word thresholds must ascend, each larger than the one before: ${number} comes after ${before}.` };
    }
    numbers.push(number);
  }
  return { value: numbers };
}

function parseNumber(text, what) {
  const trimmed = String(text).trim();
  if (trimmed === "" || !Number.isFinite(Number(trimmed))) return { problem: `The ${what} must be a number.` };
  return { value: Number(trimmed) };
}

export function parseNearTotal(text) {
  const parsed = parseNumber(text, "near-total cut");
  if (parsed.problem) return parsed;
  if (!(parsed.value > 0 && parsed.value < 1)) {
    return { problem: `The near-total cut must lie in (0, 1); ${parsed.value} does not.` };
  }
  return parsed;
}

// The length band and the overlap are typed as percentages: "5" -> 0.05.
export function parsePercent(text, what, maxShare) {
  const parsed = parseNumber(text, what);
  if (parsed.problem) return parsed;
  const share = parsed.value / 100;
  if (share < 0 || share > maxShare) {
    return { problem: `The ${what} must be from 0 to ${maxShare * 100}%; ${parsed.value}% is not.` };
  }
  return { value: Math.round(share * 1e6) / 1e6 };
}

export function parseWhole(text, what, low, high, { empty = false } = {}) {
  const trimmed = String(text).trim();
  if (trimmed === "" && empty) return { value: null };
  if (!/^\d+$/.test(trimmed)) return { problem: `The ${what} must be a whole number.` };
  const number = Number(trimmed);
  if (number < low || number > high) return { problem: `The ${what} must be from ${low} to ${high}; ${number} is not.` };
  return { value: number };
}

export function textProblem(text, what, max, { required = false } = {}) {
  const trimmed = String(text).trim();
  if (required && !trimmed) return `Give the study a ${what}.`;
  if (trimmed.length > max) return `The ${what} is ${trimmed.length} characters long; the limit is ${max}.`;
  return null;
}

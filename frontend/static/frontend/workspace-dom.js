// Small DOM helpers for the workspace. Every string becomes a text node or a
// textContent: caption text is untrusted and never parsed as HTML.

const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "title", "type", "id", "htmlFor", "tabIndex"]);

export function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (PROPERTIES.has(key)) node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Replace a node's children, skipping null / false (replaceChildren would print "null").
export function fill(node, ...children) {
  node.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

export function kbd(...keys) {
  const out = [];
  keys.forEach((key, i) => {
    if (i) out.push("+");
    out.push(h("kbd", { text: key }));
  });
  return out;
}

// 3.4 -> "3.40 s"; 75.2 -> "1:15.20"
export function seconds(value) {
  if (!Number.isFinite(value)) return "–";
  if (value < 60) return `${value.toFixed(2)} s`;
  const minutes = Math.floor(value / 60);
  return `${minutes}:${(value - 60 * minutes).toFixed(2).padStart(5, "0")}`;
}

export function span(start, end) {
  return `${seconds(start)} – ${seconds(end)}`;
}

export function duration(total) {
  const s = Math.round(total);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// Stable JSON for comparing units (keys in insertion order, which the normalisers fix).
export function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// Rendering a word-level redline (from the edit-size API's "diff") as DOM nodes.
// Text is untrusted: it is only ever set with textContent.

export function renderRedline(container, diff) {
  container.replaceChildren();
  for (const segment of diff) {
    const tag = segment.op === "insert" ? "ins" : segment.op === "delete" ? "del" : "span";
    const node = document.createElement(tag);
    node.textContent = segment.text;
    container.appendChild(node);
  }
}

let pending = null;
let study = null;

// The study whose texts the page measures: the server measures only for its members.
export function measureForStudy(slug) {
  study = slug;
}

// Ask the server (the scoring library) for the edit size of original -> corrected.
export async function fetchEditSize(original, corrected, nearTotalCut = 0.55) {
  if (pending) pending.abort();
  pending = new AbortController();
  const response = await fetch("/api/edit-size/", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    credentials: "same-origin",
    body: JSON.stringify({ study, original, corrected, near_total_cut: nearTotalCut }),
    signal: pending.signal,
  });
  if (!response.ok) throw new Error(`edit size: ${response.status}`);
  return response.json();
}

export function csrfToken() {
  const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

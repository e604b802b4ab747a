// Import forms on the study page: each posts its file to the REST API and shows
// what was stored or every error the import reported.

const result = document.getElementById("import-result");

function csrfToken() {
  const match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

for (const form of document.querySelectorAll("#imports form")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = new FormData();
    body.append("file", form.elements.file.files[0]);
    const query = new URLSearchParams();
    for (const field of form.elements) {
      if (!field.name || field.name === "file" || field.tagName === "BUTTON") continue;
      if (field.type === "checkbox") { if (field.checked) query.set(field.name, "1"); }
      else if (field.value) query.set(field.name, field.value);
    }
    result.textContent = "Importing…";
    const response = await fetch(`${form.dataset.endpoint}?${query}`, {
      method: "POST", body, headers: { "X-CSRFToken": csrfToken() }, credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({ detail: response.statusText }));
    const lines = [answer.detail || JSON.stringify(answer)];
    for (const error of answer.errors || []) lines.push(`• ${error}`);
    result.textContent = lines.join("\n");
    result.classList.toggle("error", !response.ok);
    if (response.ok) setTimeout(() => window.location.reload(), 1500);
  });
}

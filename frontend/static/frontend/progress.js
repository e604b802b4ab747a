// The progress page's agreement table: computing it reads every unit of every double-annotated
// caption, so the page comes first and the table follows from /studies/<slug>/progress/agreement/.
// Numbers arrive formatted as the rest of the page formats them; every value is set as text.

const table = document.getElementById("agreement");
const status = document.getElementById("agreement-status");

function cell(text, numeric = false) {
  const td = document.createElement("td");
  if (numeric) td.className = "num";
  td.textContent = String(text);
  return td;
}

async function loadAgreement() {
  try {
    const response = await fetch(table.dataset.url, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    const data = await response.json();
    const rows = data.rows.map((row) => {
      const tr = document.createElement("tr");
      tr.append(cell(row.label), cell(row.kappa, true), cell(row.alpha, true), cell(row.items, true));
      return tr;
    });
    table.tBodies[0].replaceChildren(...rows);
    table.hidden = false;
    const captions = data.double_annotated;
    status.textContent = `${captions.toLocaleString("en")} double-annotated caption${captions === 1 ? "" : "s"}.`;
  } catch (error) {
    status.textContent = `Agreement could not be computed: ${error.message}. Reload to try again.`;
  }
}

loadAgreement();

// The browser modules import one way: no module reaches itself through its imports. A circle
// makes the order in which the browser runs the modules decide whether a name is defined yet,
// and hides which module is the foundation. `make lint` runs this with the other Node tests.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const STATIC = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "frontend", "static", "frontend");

// The relative modules a file imports statically (import ... from "./x.js", export ... from, import "./x.js").
export function importsOf(source) {
  const found = [];
  const pattern = /^\s*(?:import|export)\b[^"';]*?(?:from\s*)?["'](\.{1,2}\/[^"']+)["']/gm;
  for (const match of source.matchAll(pattern)) found.push(match[1]);
  return found;
}

// One circle of the graph (a list of modules that ends where it starts), or null.
export function findCycle(graph) {
  const state = new Map(); // module -> "open" while on the path, "done" once fully explored
  const path = [];
  function visit(node) {
    state.set(node, "open");
    path.push(node);
    for (const next of graph.get(node) || []) {
      if (state.get(next) === "open") return [...path.slice(path.indexOf(next)), next];
      if (!state.has(next)) {
        const cycle = visit(next);
        if (cycle) return cycle;
      }
    }
    path.pop();
    state.set(node, "done");
    return null;
  }
  for (const node of [...graph.keys()].sort()) {
    if (!state.has(node)) {
      const cycle = visit(node);
      if (cycle) return cycle;
    }
  }
  return null;
}

function moduleGraph() {
  const graph = new Map();
  for (const name of readdirSync(STATIC).filter((n) => n.endsWith(".js"))) {
    const source = readFileSync(join(STATIC, name), "utf8");
    graph.set(name, importsOf(source).map((target) => normalize(target).replace(/^\.\//, "")));
  }
  return graph;
}

test("the checker finds a circle of three and reads every import form", () => {
  const graph = new Map([["a.js", ["b.js"]], ["b.js", ["c.js"]], ["c.js", ["a.js"]], ["d.js", ["a.js"]]]);
  assert.deepEqual(findCycle(graph), ["a.js", "b.js", "c.js", "a.js"]);
  assert.equal(findCycle(new Map([["a.js", ["b.js"]], ["b.js", []]])), null);
  const source = 'import { x } from "./x.js";\nimport {\n  y,\n} from "./y.js";\nexport { z } from "./z.js";\nimport "./side.js";\nconst s = "import from ./not.js";';
  assert.deepEqual(importsOf(source), ["./x.js", "./y.js", "./z.js", "./side.js"]);
});

test("no browser module imports itself through others", () => {
  const graph = moduleGraph();
  assert.ok(graph.get("workspace.js").includes("workspace-actions.js"), "the graph was read");
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `import circle: ${cycle && cycle.join(" -> ")}`);
});

// Just enough of a DOM for the workspace's pure modules to run under Node's test runner:
// elements with children, attributes, textContent and listeners, a document, localStorage and
// a window that records its listeners. Real pages are driven in Chromium by tests/browser.

export class Node {}

export class Text extends Node {
  constructor(text) {
    super();
    this.textContent = String(text);
  }
}

export class Element extends Node {
  constructor(tagName) {
    super();
    this.tagName = tagName.toUpperCase();
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.listeners = {};
    this.className = "";
    this.isContentEditable = false;
  }

  get textContent() {
    return this.children.map((child) => child.textContent).join("");
  }

  set textContent(text) {
    this.children = text === "" ? [] : [new Text(text)];
  }

  setAttribute(name, value) { this.attributes[name] = String(value); }
  getAttribute(name) { return this.attributes[name] ?? null; }
  appendChild(child) { this.children.push(child); return child; }
  append(...children) { for (const child of children) this.children.push(child instanceof Node ? child : new Text(child)); }
  replaceChildren(...children) { this.children = []; this.append(...children); }
  addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
}

export function installDom({ cookie = "" } = {}) {
  const store = new Map();
  const windowListeners = {};
  Object.assign(globalThis, {
    Node,
    Element,
    document: {
      cookie,
      createElement: (tag) => new Element(tag),
      createTextNode: (text) => new Text(text),
    },
    localStorage: {
      getItem: (key) => (store.has(key) ? store.get(key) : null),
      setItem: (key, value) => store.set(key, String(value)),
      removeItem: (key) => store.delete(key),
    },
    window: { addEventListener: (type, listener) => (windowListeners[type] ||= []).push(listener) },
  });
  return { store, windowListeners };
}

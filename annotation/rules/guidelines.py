"""A study's guidelines as text: checked, rendered from Markdown to safe HTML, and compared.

Pure: no Django. The services (annotation.services.guidelines) check a guideline before they
store it, render it for the workspace, the QC review page and the setup page, and diff two
versions for the "guidelines updated" notice.

Guideline text is untrusted (whoever administers a study writes it, and it is shown to every
annotator). It is rendered with markdown-it-py with raw HTML off, so any markup written into it
comes out as visible text, then cleaned by nh3 (an allow-list sanitiser) as a second wall: no
script, style, event handler or ``javascript:`` link survives. The text is stored as written.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt

# The guideline's Markdown, in UTF-8 bytes: some 15,000 words, far more than an annotation manual's
# few pages, and small enough to render on every page that shows it.
TEXT_MAX_BYTES = 100_000
EXAMPLES_MAX = 200
EXAMPLE_FIELD_MAX = 2_000
EXAMPLE_FIELDS = ("excerpt", "correction", "why")

# What the rendered guideline may contain: text structure, links, tables. No images (they would
# load from anywhere), no inline styles (the pages' Content-Security-Policy refuses them; a
# table's column alignment is dropped), no attributes beyond a link's address and a list's start.
ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def render(text: str) -> str:
    """The guideline's Markdown as HTML that is safe to insert into a page."""
    html = _MARKDOWN.render(text)
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
    )


def _unstorable(text: str) -> bool:
    return "\x00" in text


def text_problem(text: Any) -> str | None:
    """Why `text` cannot be a study's guideline, or None."""
    if not isinstance(text, str):
        return "The guidelines must be text (Markdown)."
    size = len(text.encode("utf-8"))
    if size > TEXT_MAX_BYTES:
        return (f"The guidelines are {size:,} bytes long; the limit is {TEXT_MAX_BYTES:,} bytes "
                "(100 kB). Shorten them or move long material to a linked document.")
    if _unstorable(text):
        return "The guidelines contain a NUL character (\\u0000), which cannot be stored."
    return None


def examples_check(examples: Any, mode_keys: Iterable[str]) -> tuple[list[dict[str, str]], str | None]:
    """(the examples cleaned, None) or ([], why refused). An example is
    {mode, excerpt, correction, why}: a failure mode of the study's taxonomy, a caption excerpt
    that shows it, the corrected excerpt, and why this mode (and not another) applies."""
    if examples is None:
        return [], None
    if not isinstance(examples, list):
        return [], "The examples must be a list of {mode, excerpt, correction, why}."
    if len(examples) > EXAMPLES_MAX:
        return [], f"At most {EXAMPLES_MAX} examples; there are {len(examples)}."
    keys = list(mode_keys)
    cleaned = []
    for n, example in enumerate(examples, start=1):
        if not isinstance(example, Mapping):
            return [], f"Example {n} must be an object {{mode, excerpt, correction, why}}."
        unknown = sorted(set(example) - {"mode", *EXAMPLE_FIELDS})
        if unknown:
            return [], f"Example {n}: {', '.join(map(str, unknown))[:80]} is not a field of an example."
        mode = example.get("mode")
        if mode not in keys:
            return [], (f"Example {n}: {mode!r:.40} is not a failure mode of the study's taxonomy "
                        f"({', '.join(keys)}).")
        row = {"mode": mode}
        for name in EXAMPLE_FIELDS:
            value = example.get(name, "")
            if not isinstance(value, str):
                return [], f"Example {n}: its {name} must be text."
            value = value.strip()
            if len(value) > EXAMPLE_FIELD_MAX:
                return [], (f"Example {n}: its {name} is {len(value):,} characters long; the limit is "
                            f"{EXAMPLE_FIELD_MAX:,}.")
            if _unstorable(value):
                return [], f"Example {n}: its {name} contains a NUL character (\\u0000)."
            row[name] = value
        if not row["excerpt"]:
            return [], f"Example {n}: give the caption excerpt that shows the mode."
        cleaned.append(row)
    return cleaned, None


def guideline_check(
    text: Any, examples: Any, mode_keys: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """({text, examples} cleaned, {field: why refused})."""
    errors = {}
    problem = text_problem(text)
    if problem:
        errors["text"] = problem
    cleaned_examples, problem = examples_check(examples, mode_keys)
    if problem:
        errors["examples"] = problem
    return {"text": text, "examples": cleaned_examples}, errors


def document(text: str, examples: Sequence[Mapping[str, str]], mode_names: Mapping[str, str]) -> str:
    """The guideline and its examples as one plain text, the thing two versions are compared on."""
    lines = [text.rstrip("\n")]
    if examples:
        lines += ["", "Examples of failure modes:"]
        for example in examples:
            name = mode_names.get(example["mode"], example["mode"])
            line = f"- {name}: \u201c{example['excerpt']}\u201d \u2192 \u201c{example.get('correction', '')}\u201d"
            if example.get("why"):
                line += f" (why: {example['why']})"
            lines.append(line)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- diff

EQUAL, INSERT, DELETE = "equal", "insert", "delete"
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
# Changed blocks larger than this (tokens on a side) are shown as whole lines removed and added,
# not word by word, so that a diff of two long, different texts stays quick.
WORD_DIFF_MAX_TOKENS = 4_000


def _merge(ops: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: list[tuple[str, str]] = []
    for op, text in ops:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def _words(old: str, new: str) -> list[tuple[str, str]]:
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if max(len(a), len(b)) > WORD_DIFF_MAX_TOKENS:
        return [(DELETE, old), (INSERT, new)]
    ops = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append((EQUAL, "".join(a[i1:i2])))
        else:
            ops.append((DELETE, "".join(a[i1:i2])))
            ops.append((INSERT, "".join(b[j1:j2])))
    return ops


def diff(old: str, new: str) -> list[tuple[str, str]]:
    """`old` to `new` as (op, text) runs, op one of equal, insert, delete: lines first, then the
    words of the lines that changed. Joining the equal and delete runs gives `old`; joining the
    equal and insert runs gives `new`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        before, after = "".join(a[i1:i2]), "".join(b[j1:j2])
        if tag == "equal":
            ops.append((EQUAL, before))
        elif tag == "replace":
            ops += _words(before, after)
        else:
            ops += [(DELETE, before), (INSERT, after)]
    return _merge(ops)


def diff_trim(ops: Sequence[tuple[str, str]], *, context: int = 160) -> list[tuple[str, str]]:
    """The diff for reading: unchanged stretches longer than twice `context` characters keep
    only `context` characters on each side of a change, with an ellipsis between."""
    trimmed = []
    last = len(ops) - 1
    for n, (op, text) in enumerate(ops):
        if op == EQUAL and len(text) > 2 * context:
            head = text[:context] if n > 0 else ""
            tail = text[-context:] if n < last else ""
            text = f"{head}\u2026{tail}" if head or tail else "\u2026"
        trimmed.append((op, text))
    return trimmed


def diff_counts(ops: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Words added and removed."""
    counts = {INSERT: 0, DELETE: 0}
    for op, text in ops:
        if op in counts:
            counts[op] += len(re.findall(r"\w+", text))
    return {"words_added": counts[INSERT], "words_removed": counts[DELETE]}

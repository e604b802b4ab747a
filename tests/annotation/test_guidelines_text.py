"""Guideline text without a database: rendering is inert, the limits refuse at the field, and the
diff gives back both versions."""

from __future__ import annotations

import pytest

from annotation.rules import guidelines as g

MODES = ["factual", "camera", "omission"]


@pytest.mark.parametrize(
    ("markdown", "forbidden"),
    [
        ("<script>alert(1)</script>", "<script"),
        ("Before <style>body{display:none}</style> after", "<style"),
        ('<img src="x" onerror="alert(1)">', "<img"),
        ('<p onclick="steal()">click</p>', "<p onclick"),
        ("[click me](javascript:alert(1))", 'href="javascript'),
        ("[click me](JaVaScRiPt:alert(1))", "href"),
        ('<a href="javascript:alert(1)">x</a>', "<a href"),
        ("![pixel](https://tracker.example/p.gif)", "<img"),
        ("[data](data:text/html;base64,PHNjcmlwdD4=)", 'href="data'),
        ('<iframe src="https://example.org"></iframe>', "<iframe"),
    ],
)
def test_markup_in_guidelines_is_rendered_inert(markdown, forbidden):
    html = g.render(markdown)
    assert forbidden not in html.lower()
    assert "onerror=" not in html.replace("&lt;", "<").split("<p>")[0]


def test_raw_html_is_shown_as_text_not_dropped():
    html = g.render("Never write <script>alert(1)</script> here.")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in html


def test_markdown_renders_headings_lists_emphasis_tables_and_safe_links():
    html = g.render("# Rules\n\n- **accept** only when *all* is right\n- ~~old~~\n\n"
                    "| mode | when |\n|---|---|\n| camera | a move |\n\n[protocol](https://example.org/p)")
    assert "<h1>Rules</h1>" in html
    assert "<li><strong>accept</strong> only when <em>all</em> is right</li>" in html
    assert "<s>old</s>" in html
    assert "<td>camera</td>" in html
    assert '<a href="https://example.org/p" rel="noopener noreferrer nofollow">protocol</a>' in html


def test_guidelines_up_to_the_limit_pass_and_one_byte_more_is_refused_naming_the_limit():
    assert g.text_problem("a" * g.TEXT_MAX_BYTES) is None
    problem = g.text_problem("a" * (g.TEXT_MAX_BYTES + 1))
    assert "100,001 bytes" in problem and "100,000 bytes (100 kB)" in problem
    # The limit is in UTF-8 bytes: 50,001 two-byte letters are over it.
    assert g.text_problem("é" * 50_001) is not None


def test_text_that_is_not_text_or_holds_nul_is_refused():
    assert g.text_problem(None) and g.text_problem(12)
    assert "NUL" in g.text_problem("a\x00b")


def test_examples_are_checked_against_the_taxonomy_and_cleaned():
    cleaned, problem = g.examples_check(
        [{"mode": "camera", "excerpt": " pans left ", "correction": "stays still", "why": "no move"}], MODES)
    assert problem is None
    assert cleaned == [{"mode": "camera", "excerpt": "pans left", "correction": "stays still", "why": "no move"}]


@pytest.mark.parametrize(
    ("examples", "says"),
    [
        ("camera", "must be a list"),
        ([{"mode": "unknown", "excerpt": "x"}], "not a failure mode"),
        ([{"mode": "camera", "excerpt": ""}], "give the caption excerpt"),
        ([{"mode": "camera", "excerpt": "x", "colour": "red"}], "colour is not a field"),
        ([{"mode": "camera", "excerpt": "x" * (g.EXAMPLE_FIELD_MAX + 1)}], "limit is 2,000"),
        ([{"mode": "camera", "excerpt": 3}], "must be text"),
        ([{"mode": "camera", "excerpt": "x"}] * (g.EXAMPLES_MAX + 1), "At most 200 examples"),
    ],
)
def test_bad_examples_are_refused_with_the_reason(examples, says):
    cleaned, problem = g.examples_check(examples, MODES)
    assert cleaned == [] and says.lower() in problem.lower()


def test_the_check_names_each_field_refused():
    _, errors = g.guideline_check("a" * (g.TEXT_MAX_BYTES + 1), [{"mode": "nope", "excerpt": "x"}], MODES)
    assert set(errors) == {"text", "examples"}


def _sides(ops):
    old = "".join(text for op, text in ops if op != g.INSERT)
    new = "".join(text for op, text in ops if op != g.DELETE)
    return old, new


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Accept when right.\nReject when wrong.\n", "Accept when all is right.\nReject when wrong.\n"),
        ("", "# New\n"),
        ("Line one\nLine two\n", ""),
        ("a b c\nd e f\ng\n", "a x c\nd e f\nh\ni\n"),
        ("no newline at the end", "no newline at the very end"),
    ],
)
def test_the_diff_gives_back_both_versions(old, new):
    assert _sides(g.diff(old, new)) == (old, new)


def test_the_diff_marks_the_changed_words_within_a_line():
    ops = g.diff("Reject a caption that names a wrong colour.\nKeep this.\n",
                 "Reject a caption that names a wrong colour or count.\nKeep this.\n")
    assert (g.INSERT, " or count") in ops
    assert not [text for op, text in ops if op == g.DELETE]
    assert g.diff_counts(ops) == {"words_added": 2, "words_removed": 0}


def test_a_long_unchanged_stretch_is_trimmed_for_reading_but_the_change_is_kept():
    old = "x " * 1000 + "\nold end\n"
    new = "x " * 1000 + "\nnew end\n"
    trimmed = g.diff_trim(g.diff(old, new), context=50)
    assert trimmed[0][0] == g.EQUAL and trimmed[0][1].startswith("\u2026") and len(trimmed[0][1]) <= 51
    assert (g.DELETE, "old") in trimmed and (g.INSERT, "new") in trimmed


def test_the_document_compared_holds_the_examples_by_mode_name():
    text = g.document("Rules.", [{"mode": "camera", "excerpt": "pans", "correction": "still", "why": "tripod"}],
                      {"camera": "Camera motion"})
    assert "Camera motion: \u201cpans\u201d \u2192 \u201cstill\u201d (why: tripod)" in text

"""Parsing and validation of the files Redline imports: captions, references, clip properties.

Pure code: no Django, no database. Every parser reads ``bytes`` (what an upload or a file gives)
and returns frozen records plus :class:`RecordError` values that say, for a person, which line,
which field and why. The import services decide what to store; the database constraints refuse
what cannot be stored whatever the services decide, and the ``storable`` flag on each caption error
says in advance which side of that line an error falls on.

One module per format, all imported from here (``from annotation.interchange.formats import ...``):

- :mod:`~annotation.interchange.formats.captions`: captions as JSON Lines (:func:`parse_captions_jsonl`);
- :mod:`~annotation.interchange.formats.clip_cc_bench`: CLIP-CC-Bench model outputs (``{"001": "text"}``, as
  overview-only captions) and its ground truth array (references);
- :mod:`~annotation.interchange.formats.fm_v2t`: FM-V2T's description CSVs (references);
- :mod:`~annotation.interchange.formats.references`: references as JSON Lines
  ``{"clip", "text", "source"?, "language"?}``;
- :mod:`~annotation.interchange.formats.clip_properties`: a CSV with a ``clip`` column and any of
  :data:`PROPERTY_FIELDS` plus ``manipulated``;
- :mod:`~annotation.interchange.formats.common`: the error record, limits and helpers they share.

Line numbers
------------
``RecordError.line`` and ``*.line`` are 1-based. For JSON Lines and CSV files they are text lines
of the file (a CSV record that spans lines is numbered by its first line); for whole-JSON files
(Clip-CC-Bench) they are the 1-based position of the entry in the array or object. Line 0 means
the file as a whole.
"""

from annotation.interchange.formats.captions import (
    CAPTION_KEYS,
    MAX_OVERVIEW_CHARS,
    MAX_WINDOW_TEXT_CHARS,
    MAX_WINDOWS,
    META_KEYS,
    WINDOW_END_TOLERANCE_S,
    WINDOW_KEYS,
    CaptionRecord,
    ParseResult,
    WindowRecord,
    parse_captions_jsonl,
)
from annotation.interchange.formats.clip_cc_bench import (
    CLIP_CC_REFERENCE_KEYS,
    CLIP_CC_SOURCE,
    parse_clip_cc_model_file,
    parse_clip_cc_references,
)
from annotation.interchange.formats.clip_properties import (
    MANIPULATED_COLUMN,
    PROPERTY_FIELDS,
    PROPERTY_VALUES,
    ClipPropertiesRecord,
    parse_clip_properties_csv,
)
from annotation.interchange.formats.common import (
    MAX_NAME_CHARS,
    VIDEO_EXTENSIONS,
    RecordError,
    clip_name_from_filename,
    normalise_choice,
)
from annotation.interchange.formats.fm_v2t import (
    FMV2T_CLIP_COLUMN,
    FMV2T_SOURCE,
    parse_fmv2t_descriptions_csv,
)
from annotation.interchange.formats.references import (
    DEFAULT_REFERENCE_LANGUAGE,
    DEFAULT_REFERENCE_SOURCE,
    MAX_LANGUAGE_CHARS,
    MAX_REFERENCE_CHARS,
    MAX_SOURCE_CHARS,
    REFERENCE_KEYS,
    ReferenceRecord,
    parse_references_jsonl,
)

__all__ = [
    "MAX_NAME_CHARS",
    "VIDEO_EXTENSIONS",
    "RecordError",
    "clip_name_from_filename",
    "normalise_choice",
    "WINDOW_END_TOLERANCE_S",
    "MAX_OVERVIEW_CHARS",
    "MAX_WINDOW_TEXT_CHARS",
    "MAX_WINDOWS",
    "CAPTION_KEYS",
    "WINDOW_KEYS",
    "META_KEYS",
    "WindowRecord",
    "CaptionRecord",
    "ParseResult",
    "parse_captions_jsonl",
    "MAX_REFERENCE_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_LANGUAGE_CHARS",
    "REFERENCE_KEYS",
    "DEFAULT_REFERENCE_SOURCE",
    "DEFAULT_REFERENCE_LANGUAGE",
    "ReferenceRecord",
    "parse_references_jsonl",
    "CLIP_CC_REFERENCE_KEYS",
    "CLIP_CC_SOURCE",
    "parse_clip_cc_model_file",
    "parse_clip_cc_references",
    "FMV2T_SOURCE",
    "FMV2T_CLIP_COLUMN",
    "parse_fmv2t_descriptions_csv",
    "PROPERTY_FIELDS",
    "PROPERTY_VALUES",
    "MANIPULATED_COLUMN",
    "ClipPropertiesRecord",
    "parse_clip_properties_csv",
]

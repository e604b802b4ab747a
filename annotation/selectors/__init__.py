"""Read-only queries that pages and the API share: an annotator's queue and the review queue
(``queues``), a study's progress (``progress``), the running study's dashboard (``dashboard``),
what counts in the profile and the release (``counted``: work, never gold or practice), the
annotator quality page (``annotator_quality``) and the work log (``work_log``).

May import models, rules and interchange; never services or the API.
"""

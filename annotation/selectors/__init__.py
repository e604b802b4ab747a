"""Read-only queries that pages and the API share: an annotator's queue and the review queue
(``queues``), a study's progress (``progress``) and the running study's dashboard (``dashboard``).

May import models, rules and interchange; never services or the API.
"""

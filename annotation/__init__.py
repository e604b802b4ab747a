"""The annotation app: studies, their content and the post-editing workflow.

One Django app, in layers a module's folder names (read top to bottom; each may import the ones
below it, never the ones above):

- ``api/``: the REST API: thin views, serializers, URL routes, how refusals are worded.
- ``services/``: every write, each in one transaction, asking the study's state rule first.
- ``selectors/``: read-only queries the pages and the API share (queues, progress, dashboard,
  what counts, annotator quality, the work log).
- ``interchange/``: what goes in and out as files: import formats, the study bundle, limits.
- ``media/``: video files: probing, proxies, posters, storage written whole, ranged streaming.
- ``rules/``: pure rules with no Django: workflow states, assignment designs, window times,
  returns, risk, the taxonomy, study settings, agreement, audit diffs, guidelines, gold.

Beside them, the app's own core: ``models`` (the data and its constraints), ``permissions`` (who
may do what), ``errors`` (what the rules and services raise), ``jobs`` and ``tasks`` (background
work), ``prepared`` (the hot paths' reads, their SQL built once per process), ``middleware``,
``admin``, ``routes`` and ``demo_content``.
"""

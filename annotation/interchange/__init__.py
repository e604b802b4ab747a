"""What goes in and out of Redline as files: the import formats (``formats/``, pure parsers and
checks), the study bundle (``bundles``) and the import size limit (``limits``).

May import rules; never models, services or the API (the services do the storing).
"""

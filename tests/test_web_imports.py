"""The web server's processes stay light: loading the application and its URL configuration
imports no analysis, plotting, Parquet or model library. Those come in with the request (or the
worker's job) that needs them: a profile export, a data release, a scoring job."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO

# What a gunicorn worker does before its first request: build the WSGI application, then resolve
# every URL pattern (which imports every view module).
LOAD_AND_LIST = """
import json, sys
from config.wsgi import application
from django.urls import get_resolver

def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))

walk(get_resolver().url_patterns)
print(json.dumps(sorted(sys.modules)))
"""

# numpy too: 10 MB of every web process, for nothing a page or a save needs (issue 33's 120 MB).
HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "torch", "sentence_transformers", "transformers",
         "sklearn", "nltk", "llama_cpp", "numpy")


def test_loading_the_web_application_imports_no_analysis_plotting_parquet_or_model_library():
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    result = subprocess.run(
        [sys.executable, "-c", LOAD_AND_LIST], cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert "frontend.views_profiles" in loaded and "scoring.release" in loaded, "the URLs were not all loaded"
    heavy = sorted({name.split(".")[0] for name in loaded} & set(HEAVY))
    assert heavy == [], (
        f"loading the URL configuration imported {', '.join(heavy)}: import it inside the function "
        "that needs it (run `python -X importtime` to see the chain)"
    )


def test_the_web_application_leaves_what_it_loaded_out_of_the_garbage_collector_s_walks():
    """config.wsgi freezes what loading left (gc.freeze): requests' collections skip it."""
    code = "import gc; from config.wsgi import application; print(gc.get_freeze_count())"
    clean = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[-1]) > 10_000

# Redline: `make demo` to try it, `make test` to check it. See README.md and docs/.
PY := .venv/bin/python
PYTEST := .venv/bin/pytest
HOST ?= 127.0.0.1
PORT ?= 8000
# `make test` runs on PostgreSQL; the test runner creates test_<name> from this URL.
TEST_DATABASE_URL ?= postgres://$(shell id -un)@127.0.0.1:5432/redline
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo venv venv-dev system lint test test-fast bench soak serve serve-with-worker banner llm-server docs

# What runs the product (requirements.txt); venv-dev adds the tests and linters (requirements-dev.txt).
venv:
	@scripts/venv.sh

venv-dev:
	@scripts/venv.sh dev

system:
	@scripts/system-packages.sh demo

# The demo runs one Celery worker beside the web server, through a folder in var/
# (no Redis needed); Ctrl-C stops both. `make serve` does the same without building the demo.
# LLM=1 also starts a local LLM server (SmolLM2-135M, llama-cpp-python; the first run compiles
# it, see docs/getting-started.md) and scores LLMFactsF1 of every final verdict with it.
DEMO_ENV := CELERY_BROKER_URL=filesystem://
# The demo writes e-mails (invitations) as files in var/mail instead of sending them.
MAIL_ENV ?=
LLM ?= 0
LLM_PORT ?= 8089
ifeq ($(LLM),1)
DEMO_ENV += LLMFACTS_BASE_URL=http://127.0.0.1:$(LLM_PORT)/v1 LLMFACTS_MODEL=smollm2-135m
LLM_SETUP := llm-server
endif

llm-server: venv
	@scripts/llm-server.sh

demo: system venv $(LLM_SETUP)
	@$(PY) scripts/serve_banner.py --check-free --host $(HOST) --port $(PORT)
	$(PY) manage.py migrate --no-input -v0
	$(PY) manage.py make_demo
	@$(MAKE) --no-print-directory serve-with-worker BANNER_FLAGS="--accounts --mail-dir var/mail" \
		MAIL_ENV=EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend

serve: system venv $(LLM_SETUP)
	@$(PY) scripts/serve_banner.py --check-free --host $(HOST) --port $(PORT)
	$(PY) manage.py migrate --no-input -v0
	@$(MAKE) --no-print-directory serve-with-worker

# The address (and, for the demo, the accounts) are printed by `banner` once the server answers,
# after the worker's banner and warnings; a busy port is said before anything starts (PORT=).
BANNER_FLAGS ?=
BANNER = $(PY) scripts/serve_banner.py --host $(HOST) --port $(PORT) $(BANNER_FLAGS)
# With DEBUG off, pages link the collected static files by their hashed names (config/staticfiles.py):
# collect them first. With DEBUG on (the default) the apps' files are served as they are.
DEBUG_IS_ON = $(PY) -c "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); \
	from django.conf import settings; raise SystemExit(0 if settings.DEBUG else 1)"
serve-with-worker:
	@$(PY) scripts/serve_banner.py --check-free --host $(HOST) --port $(PORT)
	@$(DEBUG_IS_ON) || $(PY) manage.py collectstatic --no-input -v0
	@llm=; if [ "$(LLM)" = 1 ]; then \
		echo "LLM server (SmolLM2-135M) at http://127.0.0.1:$(LLM_PORT)/v1, log in var/llm-server.log"; \
		mkdir -p var; $(PY) -m scoring.metrics.llmfacts.local_server --port $(LLM_PORT) >var/llm-server.log 2>&1 & llm=$$!; \
	fi; \
		$(DEMO_ENV) $(MAIL_ENV) $(PY) -m celery -A config worker --pool=solo --loglevel=WARNING & worker=$$!; \
		$(BANNER) & banner=$$!; \
		trap "kill $$worker $$llm $$banner 2>/dev/null" EXIT INT TERM; \
		$(DEMO_ENV) $(MAIL_ENV) $(PY) manage.py runserver $(HOST):$(PORT)

# What serve-with-worker prints once the server answers (alone: waits for a server on PORT).
banner:
	@$(BANNER)

# Static checks: ruff over the Python, strict mypy over the pure scoring modules, the layers'
# import contracts (import-linter; both configured in pyproject.toml), ESLint over the browser
# code (and its tests), the pure JavaScript modules under Node's test runner (tests/js), and the
# documentation site built strictly.
# Tools: requirements-dev.txt, package-lock.json.
lint: venv-dev
	@scripts/js-tools.sh
	$(PY) -m ruff check .
	$(PY) -m mypy
	.venv/bin/lint-imports
	node_modules/.bin/eslint frontend/static tests eslint.config.js
	node --test tests/js/
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet --site-dir var/docs-check

# The documentation site (mkdocs.yml, docs/): built into site/, open site/index.html. `make lint`
# builds it strictly (into var/docs-check), so a broken link or a page missing from the navigation fails.
docs: venv-dev
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet

# The tests of what the database itself refuses (triggers, constraints), run on SQLite as well.
SQLITE_RULES := tests/annotation/test_state_triggers.py tests/annotation/test_state_sweep.py \
	tests/annotation/test_lifecycle.py tests/annotation/test_window_constraints.py \
	tests/annotation/test_window_overlap.py tests/annotation/test_withdrawal.py

# The whole suite: the checks above, then PostgreSQL, Redis, a real Celery worker, headless Chromium.
# Tasks run eagerly except in the worker tests, which send them through Redis.
test: venv-dev lint
	@scripts/system-packages.sh test
	@scripts/services.sh
	@scripts/llm-server.sh
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_REDIS_URL) CELERY_TASK_ALWAYS_EAGER=1 \
		REDLINE_REQUIRE_LLM_SERVER=1 $(PYTEST) -p no:cacheprovider
	@echo "The database's own rules again on SQLite, the demo's database (a table SQLite rebuilds loses its triggers):"
	$(PYTEST) -p no:cacheprovider -q -m "not postgres and not worker and not browser" $(SQLITE_RULES)

# The inner loop: SQLite, no browser, no worker, no model loading.
test-fast: venv-dev
	$(PYTEST) -p no:cacheprovider -m "not browser and not postgres and not worker and not slow and not soak"

bench: venv-dev
	@for script in bench/bench_*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

# The soak (issue 20): the real stack (its own PostgreSQL cluster and Redis, gunicorn, Celery
# workers) driven over HTTP by simulated people while faults are injected, then its invariants
# checked; SOAK_MINUTES of faults (10). `make test` runs the short version (tests/soak/).
SOAK_MINUTES ?= 10
soak: venv-dev
	@scripts/system-packages.sh demo
	$(PY) -m soak --minutes $(SOAK_MINUTES)

# The two commands of the README: `make run` and `make test`.
.PHONY: run test setup browser services lint format typecheck audit lock migrate worker beat messages clean bench

PYTHON := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

setup:
	@scripts/setup.sh

# make run PORT=8080 HOST=0.0.0.0; make run WEBHOOK_ALLOW_PRIVATE_TARGETS=true lets webhooks reach
# a receiver on this machine (read once at start: set it here, not later in another shell).
# make run LOCALSTRIPE_PORT=8430 moves localstripe (default 8420, or a free port);
# make run PROVIDERS=fakes FAKES_PORTS=19000 moves the provider fakes to 19000-19002 (or three
# ports: FAKES_PORTS=19000,19005,19010; default 18610-18612, or free ports). A port asked for
# that is taken stops the run, saying which.
run: setup
	@PROVIDERS="$(PROVIDERS)" LOCALSTRIPE_PORT="$(LOCALSTRIPE_PORT)" FAKES_PORTS="$(FAKES_PORTS)" scripts/run.sh $(HOST) $(PORT)

test: setup browser services
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	.venv/bin/lint-imports
	$(PYTHON) -m pytest -n auto --dist loadfile --durations=20 $(PYTEST_ARGS)

services:
	@scripts/services.sh

browser:
	@scripts/setup.sh --browser

# The benchmark (docs/performance.md): gunicorn + PostgreSQL + Redis + a Celery worker on
# 127.0.0.1, one table, bench/results/latest.{json,png}. BENCH_ARGS=--quick for a short run.
bench: setup services
	@scripts/bench-deps.sh
	$(PYTHON) bench/run.py $(BENCH_ARGS)

lint: setup
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	.venv/bin/lint-imports

typecheck: setup
	$(PYTHON) -m mypy

# Known vulnerabilities with a fixed version, over the locked environment. Needs PyPI's
# vulnerability data: it fails (never skips) where that cannot be reached.
audit: setup
	.venv/bin/pip-audit --local --progress-spinner off --strict

# Regenerate the hashed locks from pyproject.toml (newest versions within its ranges).
lock: setup
	.venv/bin/uv pip compile pyproject.toml --generate-hashes --python-version 3.13 --custom-compile-command "make lock" -q -o requirements/prod.txt
	.venv/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.13 --custom-compile-command "make lock" -q -o requirements/dev.txt
	.venv/bin/uv pip compile pyproject.toml --extra dev --extra bench --generate-hashes --python-version 3.13 --custom-compile-command "make lock" -q -o requirements/bench.txt

format: setup
	$(PYTHON) -m ruff check --fix .
	$(PYTHON) -m ruff format .

migrate: setup
	$(PYTHON) manage.py migrate

worker: setup
	.venv/bin/celery -A reseller worker --loglevel=INFO -Q celery,celery-webhooks

beat: setup
	.venv/bin/celery -A reseller beat --loglevel=INFO

messages: setup
	$(PYTHON) manage.py makemessages -l es -l fr --ignore=.venv --ignore=staticfiles --ignore=tests --ignore=test-artifacts --ignore=bench
	$(PYTHON) manage.py compilemessages --ignore=.venv

clean:
	rm -rf .venv db.sqlite3 staticfiles .pytest_cache .ruff_cache

# The two commands of the README: `make run` and `make test`.
.PHONY: run test setup browser services lint format migrate worker beat messages clean bench

PYTHON := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

setup:
	@scripts/setup.sh

run: setup
	@scripts/run.sh $(HOST) $(PORT)

test: setup browser services
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pytest $(PYTEST_ARGS)

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

format: setup
	$(PYTHON) -m ruff check --fix .
	$(PYTHON) -m ruff format .

migrate: setup
	$(PYTHON) manage.py migrate

worker: setup
	.venv/bin/celery -A reseller worker --loglevel=INFO

beat: setup
	.venv/bin/celery -A reseller beat --loglevel=INFO

messages: setup
	$(PYTHON) manage.py makemessages -l es -l fr --ignore=.venv --ignore=staticfiles --ignore=tests --ignore=test-artifacts --ignore=bench
	$(PYTHON) manage.py compilemessages --ignore=.venv

clean:
	rm -rf .venv db.sqlite3 staticfiles .pytest_cache .ruff_cache

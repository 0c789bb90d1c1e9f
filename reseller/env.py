"""The one place that reads the process environment (docs/contract.md §9)."""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A developer may keep local overrides in a .env file; the environment always wins.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Never valid outside a developer's machine: production refuses to start with it.
INSECURE_SECRET_KEY = "insecure-development-key-change-me"

"""Tests run on the real services: PostgreSQL and Redis on this machine unless told otherwise."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reseller")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production-0123456789abcdef")
# A fixed Fernet key of the suite (never a production one): PINs encrypted at rest.
os.environ.setdefault("FIELD_ENCRYPTION_KEY", "dGVzdC1maWVsZC1lbmNyeXB0aW9uLWtleS0zMmJ5dGU=")

from .base import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# One run's keys apart from another's; a process a test starts shares its parent's.
CACHES["default"]["KEY_PREFIX"] = os.environ.get("TEST_CACHE_KEY_PREFIX", f"test-{os.getpid()}")  # noqa: F405
REQUEST_LOG_REDIS_KEY = f"{CACHES['default']['KEY_PREFIX']}:requestlog"  # noqa: F405
# The Redis databases the suite uses besides REDIS_URL's (cache, rate limits), each from the
# environment: a broker of the suite's own, and the servers a drill starts. Nothing is flushed:
# every process a test starts writes under a key prefix of its own, removed afterwards.
TEST_REDIS_SERVER = env.str("TEST_REDIS_SERVER", default="redis://127.0.0.1:6379")  # noqa: F405
TEST_REDIS_DB_BROKER = env.int("TEST_REDIS_DB_BROKER", default=6)  # noqa: F405
TEST_REDIS_DB_SERVERS = env.int("TEST_REDIS_DB_SERVERS", default=14)  # noqa: F405
TEST_REDIS_DB_DRILL = env.int("TEST_REDIS_DB_DRILL", default=12)  # noqa: F405
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
TASKS_IN_PROCESS_THREADED = False
BANK_TRANSFER_BENEFICIARY = "Reseller Test Ltd"
BANK_TRANSFER_IBAN = "GB82 WEST 1234 5698 7654 32"
BANK_TRANSFER_BIC = "WESTGB2L"
# A drain returns as soon as nothing is due (the tests call it directly, many times); the
# lingering of the deployed default has its own test.
WEBHOOK_DRAIN_LINGER_SECONDS = 0.0

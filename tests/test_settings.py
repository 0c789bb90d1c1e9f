"""Settings come from the environment; production refuses to start insecurely."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(code: str, env: dict) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "REDIS_URL",
            "CELERY_BROKER_URL",
            "SECRET_KEY",
            "DEBUG",
            "DJANGO_SETTINGS_MODULE",
        }
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


SETUP = "import django; django.setup(); from django.conf import settings as s; "


def test_production_refuses_the_default_secret_key():
    result = run(
        SETUP + "print('started')", {"DJANGO_SETTINGS_MODULE": "reseller.settings.production"}
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr
    assert "started" not in result.stdout


def test_debug_false_refuses_the_default_secret_key_in_local_settings_too():
    result = run(
        SETUP + "print('started')",
        {"DJANGO_SETTINGS_MODULE": "reseller.settings.local", "DEBUG": "false"},
    )
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_embedded_default_is_sqlite_memory_cache_and_in_process_tasks():
    result = run(
        SETUP + "print(s.DATABASES['default']['ENGINE'], s.CACHES['default']['BACKEND'], "
        "s.CELERY_TASK_ALWAYS_EAGER, s.DEBUG)",
        {"DJANGO_SETTINGS_MODULE": "reseller.settings.local"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "django.core.cache.backends.locmem.LocMemCache",
        "True",
        "True",
    ]


def test_environment_selects_postgresql_redis_and_real_workers():
    result = run(
        SETUP + "print(s.DATABASES['default']['ENGINE'], s.CACHES['default']['BACKEND'], "
        "s.CELERY_TASK_ALWAYS_EAGER, s.CELERY_BROKER_URL)",
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.local",
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/reseller",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/1",
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.postgresql",
        "reseller.cache.RedisCache",
        "False",
        "redis://127.0.0.1:6379/1",
    ]


def test_production_settings_pass_check_deploy():
    env = {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
        "SECRET_KEY": "x7Hq2-very-long-random-production-secret-value-0123456789-abcdefghij",
        "ALLOWED_HOSTS": "reseller.example",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/reseller",
    }
    clean = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "REDIS_URL"}}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_email_url_becomes_the_default_mailer_with_its_tls_and_credentials():
    code = (
        SETUP
        + "from django.core import mail; m = mail.mailers['default']; "
        + "print(type(m).__module__, m.host, m.port, m.username, m.use_tls)"
    )
    smtp = run(
        code,
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.local",
            "EMAIL_URL": "smtp+tls://shop:secret@mail.example.com:587",
        },
    )
    assert smtp.returncode == 0, smtp.stderr
    assert smtp.stdout.split() == [
        "django.core.mail.backends.smtp", "mail.example.com", "587", "shop", "True"
    ]  # fmt: skip
    console = run(
        SETUP + "from django.core import mail; print(type(mail.mailers['default']).__module__)",
        {"DJANGO_SETTINGS_MODULE": "reseller.settings.local"},
    )
    assert console.stdout.strip() == "django.core.mail.backends.console", console.stderr


def test_a_sweeper_cutoff_shorter_than_a_task_may_run_is_refused():
    """A dispatched recharge whose call may still be in flight must never be taken over."""
    result = run(
        SETUP + "print('started')",
        {
            "DJANGO_SETTINGS_MODULE": "reseller.settings.local",
            "RECHARGE_STUCK_DISPATCHED_SECONDS": "60",
        },
    )
    assert result.returncode != 0
    assert "RECHARGE_STUCK_DISPATCHED_SECONDS" in result.stderr
    assert "started" not in result.stdout


@pytest.mark.parametrize(
    "url, path",
    [
        ("filemail:///var/mail/reseller", "/var/mail/reseller"),  # the documented form
        ("filemail:///tmp/a%20b", "/tmp/a b"),
        ("filemail://mail/out", "mail/out"),  # no third slash: relative, as written
    ],
)
def test_a_file_email_url_keeps_its_path_as_written(monkeypatch, url, path):
    """Issue 32, defect 10: django-environ turned filemail:///var/mail/reseller into the
    relative var/mail/reseller."""
    from reseller.settings.base import mailers_from_env

    monkeypatch.setenv("EMAIL_URL", url)
    mailer = mailers_from_env("consolemail://")["default"]
    assert mailer["BACKEND"] == "django.core.mail.backends.filebased.EmailBackend"
    assert mailer["OPTIONS"] == {"file_path": path}

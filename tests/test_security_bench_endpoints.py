"""The benchmark's floor endpoint exists only where BENCH_ENDPOINTS=true (bench/run.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


def test_the_bench_floor_endpoint_is_not_mounted_by_default(api):
    assert settings.BENCH_ENDPOINTS is False
    response = api.post("/api/v1/_bench/floor", {}, format="json")
    assert response.status_code == 404
    assert response.headers["Content-Type"].startswith("application/problem+json")
    schema = api.get("/api/v1/schema/?format=json").json()
    assert not any("_bench" in path for path in schema["paths"])


def test_with_bench_endpoints_the_floor_needs_a_b2b_key_and_stays_out_of_the_schema():
    code = (
        "import django; django.setup(); from django.urls import resolve; "
        "from drf_spectacular.generators import SchemaGenerator; "
        "print(resolve('/api/v1/_bench/floor').url_name, "
        "resolve('/api/v1/_bench/floor').func.view_class.permission_classes[0].__name__, "
        "any('_bench' in p for p in SchemaGenerator().get_schema(None, True)['paths']))"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"} | {
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "BENCH_ENDPOINTS": "true",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["bench-floor", "B2BApiKeyRequired", "False"]

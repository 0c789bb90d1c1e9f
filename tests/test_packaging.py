"""`pip install .` gives a copy that runs on its own: the wheel holds every app of
INSTALLED_APPS, the site's templates, static files and compiled translations, and settings find
them next to the installed code (not in a checkout).

The wheel is built from a copy of the checkout (the build writes build/ and *.egg-info beside
its sources), installed with --no-deps into a folder outside the checkout, and the project's
dependencies come from the virtualenv running the tests. Django's ``check`` and the lookups then
run in a process whose working directory and import path do not contain the checkout.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

pytestmark = pytest.mark.integration

CHECKOUT = Path(settings.BASE_DIR).resolve()
# Never part of a build: local state, the suite's own artefacts, caches.
SKIPPED_AT_TOP = {
    ".venv",
    ".git",
    "build",
    "staticfiles",
    "test-artifacts",
    "var",
    "node_modules",
    "db.sqlite3",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
}
SKIPPED_ANYWHERE = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
# A message of ours that neither Django nor another package translates, and its Spanish.
OUR_MESSAGE = "Your role in this account does not include its money."
OUR_MESSAGE_ES = "Tu rol en esta cuenta no incluye su dinero."

PROBE = r"""
import json, sys
import django
from django.conf import settings
django.setup()
from django.apps import apps
from django.contrib.staticfiles import finders
from django.template.loader import get_template
from django.utils import translation
import gettext
names = json.loads(sys.argv[1])
with translation.override("es"):
    translated = translation.gettext(sys.argv[2])
print(json.dumps({
    "apps": {name: apps.get_app_config(name).path for name in names},
    "templates": {
        name: get_template(name).origin.name
        for name in ("base.html", "admin/index.html", "emails/receipt.html")
    },
    "static": {name: finders.find(name) for name in ("css/site.css", "catalog/catalog.css")},
    "mo": gettext.find("django", str(settings.LOCALE_PATHS[0]), ["es"]),
    "translated": translated,
}))
"""


def project_apps() -> dict[str, str]:
    """Label -> module of every installed app whose code is in this checkout."""
    return {
        config.label: config.name
        for config in apps.get_app_configs()
        if Path(config.path).resolve().is_relative_to(CHECKOUT)
        and not Path(config.path).resolve().is_relative_to(CHECKOUT / ".venv")
    }


def copy_sources(destination: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(SKIPPED_ANYWHERE(folder, names))
        if Path(folder).resolve() == CHECKOUT:
            skipped |= SKIPPED_AT_TOP & set(names)
        elif Path(folder).resolve() == CHECKOUT / "bench":
            skipped.add("results")
        return skipped

    source = destination / "source"
    shutil.copytree(CHECKOUT, source, ignore=ignore, symlinks=True)
    return source


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, f"{args[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the folder it was installed into)."""
    work = tmp_path_factory.mktemp("packaging")
    source = copy_sources(work)
    wheels = work / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q"]
    build += ["-w", str(wheels)]
    if importlib.util.find_spec("setuptools") is not None:
        # The build backend is here: no download. Else pip fetches it (pyproject's build-system).
        build.append("--no-build-isolation")
    run(build, cwd=work)
    [wheel] = wheels.glob("reseller-*.whl")
    target = work / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q"]
    run([*install, "--target", str(target), str(wheel)], cwd=work)
    return wheel, target


def installed_env(target: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSAFEPATH"}}
    # The installed copy first; the virtualenv's site-packages give the dependencies.
    env["PYTHONPATH"] = str(target)
    env["DJANGO_SETTINGS_MODULE"] = "reseller.settings.test"
    return env


def test_the_wheel_holds_every_app_and_neither_the_tests_nor_the_benchmark(installed):
    wheel, _target = installed
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    modules = set(project_apps().values())
    assert modules >= {"reseller", "accounts", "emails", "recipients", "requestlog"}
    assert {module.split(".")[0] for module in modules} <= tops
    assert "tests" not in tops
    assert "bench" not in tops


def test_an_installed_copy_passes_django_check_outside_the_checkout(installed, tmp_path):
    _wheel, target = installed
    out = run(
        [sys.executable, "-m", "django", "check", "--fail-level", "WARNING"],
        cwd=tmp_path,
        env=installed_env(target),
    )
    assert "System check identified no issues" in out


def test_apps_templates_static_files_and_translations_come_from_the_installed_copy(
    installed, tmp_path
):
    _wheel, target = installed
    names = json.dumps(sorted(project_apps()))
    out = run(
        [sys.executable, "-c", PROBE, names, OUR_MESSAGE],
        cwd=tmp_path,
        env=installed_env(target),
    )
    found = json.loads(out)
    site = target.resolve()

    def inside(path: str | None) -> bool:
        return path is not None and Path(path).resolve().is_relative_to(site)

    assert found["apps"].keys() == set(project_apps())
    assert {label: path for label, path in found["apps"].items() if not inside(path)} == {}
    assert {name: path for name, path in found["templates"].items() if not inside(path)} == {}
    assert {name: path for name, path in found["static"].items() if not inside(path)} == {}
    # The template that overrides the admin's is ours, not django.contrib.admin's.
    assert found["templates"]["admin/index.html"].endswith("reseller/templates/admin/index.html")
    assert inside(found["mo"]), found["mo"]
    assert found["translated"] == OUR_MESSAGE_ES

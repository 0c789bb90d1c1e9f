"""The API documentation shows real examples (issue 32, defect 8): every operation has request
and response examples that match their schemas, every error response its problem+json
examples, the webhook events are in the schema, the reseller's operations come before the
back office's, and the ``type`` link of every error we can answer opens a page of ours."""

from __future__ import annotations

import ast
import importlib
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.apps import apps
from django.test import Client
from django.urls import get_resolver
from django.utils.html import escape
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from reseller.errors import STATUS_CODES, ApplicationError
from reseller.problem_types import ERRORS_PATH, PROBLEM_TYPES, problem_type
from webhooks.catalogue import EVENT_TYPES, WEBHOOK_TEST

ROOT = Path(__file__).resolve().parent.parent
METHODS = {"get", "post", "put", "patch", "delete"}
PROBLEM = "application/problem+json"
# What drf-spectacular invents when an operation has no example of its own.
FILLER = ('"HPP"', "-94231.74", '"status": 0', '"string"', "docs.reseller.example", "example.com")


@pytest.fixture(scope="module")
def schema() -> dict:
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return json.loads(response.content)


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield f"{method.upper()} {path}", operation


def _examples(content: dict) -> list:
    return [example["value"] for example in (content.get("examples") or {}).values()]


def test_every_operation_has_request_and_response_examples(schema):
    missing = []
    for name, operation in _operations(schema):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None and not _examples(body):
            missing.append(f"{name}: request")
        success = [
            content
            for status, response in operation["responses"].items()
            if status.startswith("2")
            for content in (response.get("content") or {}).values()
        ]
        no_body = all(
            not response.get("content")
            for status, response in operation["responses"].items()
            if status.startswith("2")
        )
        if not no_body and not any(_examples(content) for content in success):
            missing.append(f"{name}: 2xx response")
    assert missing == []
    assert len(list(_operations(schema))) > 30


def test_every_error_response_has_a_problem_example_of_its_status(schema):
    missing = []
    for name, operation in _operations(schema):
        for status, response in operation["responses"].items():
            if not status.startswith(("4", "5")):
                continue
            content = response.get("content") or {}
            examples = _examples(content.get(PROBLEM, {}))
            if set(content) != {PROBLEM} or not examples:
                missing.append(f"{name}: {status}")
            for example in examples:
                assert example["status"] == int(status), (name, example)
                assert example["code"] in PROBLEM_TYPES, (name, example)
                assert example["type"].endswith(ERRORS_PATH + example["code"])
                assert {"title", "detail", "requestId"} <= set(example), (name, example)
    assert missing == []


def test_every_operation_a_key_may_call_documents_its_429(schema):
    """Every request made with a key counts against its per-minute limit (contract section 7,
    accounts.throttling.ApiKeyRateThrottle): the operation can answer 429 rate_limited."""
    missing = []
    for name, operation in _operations(schema):
        if not any("apiKey" in scheme for scheme in operation.get("security", [])):
            continue
        response = operation["responses"].get("429")
        examples = _examples((response or {}).get("content", {}).get(PROBLEM, {}))
        if not any(example["code"] == "rate_limited" for example in examples):
            missing.append(name)
    assert missing == []


def test_path_parameters_are_named_in_camel_case(schema):
    """Contract section 1: camelCase everywhere, as the spec's ``DELETE /cart/items/:itemId``."""
    assert "/api/v1/cart/items/{itemId}" in schema["paths"]
    snake = []
    for path, item in schema["paths"].items():
        names = re.findall(r"{([^}]+)}", path)
        declared = [
            parameter["name"]
            for operation in item.values()
            if isinstance(operation, dict)
            for parameter in operation.get("parameters", [])
            if parameter["in"] == "path"
        ]
        snake += [f"{path} {name}" for name in [*names, *declared] if "_" in name]
        assert set(declared) <= set(names), path
    assert snake == []


def _example_sites(schema):
    """(where, schema, example value) of every example: operations and webhooks."""
    items = [("paths", schema["paths"]), ("webhooks", schema["webhooks"])]
    for kind, mapping in items:
        for path, item in mapping.items():
            for method, operation in item.items():
                if method not in METHODS:
                    continue
                where = f"{kind} {method.upper()} {path}"
                contents = [
                    (f"{where} request", operation.get("requestBody", {}).get("content", {}))
                ] + [
                    (f"{where} {status}", response.get("content") or {})
                    for status, response in operation["responses"].items()
                ]
                for label, content in contents:
                    for media_type, media in content.items():
                        for value in _examples(media):
                            yield f"{label} {media_type}", media["schema"], value


def test_every_example_matches_its_schema(schema):
    registry = Registry().with_resource(
        "urn:api", Resource.from_contents(schema, default_specification=DRAFT202012)
    )
    checked, wrong = 0, []
    for where, subschema, value in _example_sites(schema):
        validator = Draft202012Validator(
            {"$ref": "urn:api#/components/schemas/Problem"}
            if subschema == {"$ref": "#/components/schemas/Problem"}
            else _absolute(subschema),
            registry=registry,
        )
        wrong += [
            f"{where} {error.json_path}: {error.message}" for error in validator.iter_errors(value)
        ]
        checked += 1
    assert wrong == [], "\n".join(wrong)
    assert checked > 100


def _absolute(subschema):
    """Local references (#/components/...) resolved against the whole document."""
    if isinstance(subschema, dict):
        return {
            key: ("urn:api" + value if key == "$ref" else _absolute(value))
            for key, value in subschema.items()
        }
    if isinstance(subschema, list):
        return [_absolute(value) for value in subschema]
    return subschema


def test_no_example_is_generated_filler(schema):
    examples = [value for _where, _schema, value in _example_sites(schema)]
    text = json.dumps(examples, ensure_ascii=False)
    assert [filler for filler in FILLER if filler in text] == []
    assert "+525512345601" in text and "Telcel" in text and "ord_" in text


def test_the_reseller_operations_come_first_and_the_back_office_last(schema):
    paths = list(schema["paths"])
    admin = [i for i, path in enumerate(paths) if path.startswith("/api/v1/admin/")]
    assert admin and admin == list(range(len(paths) - len(admin), len(paths)))
    tags = [tag["name"] for tag in schema["tags"]]
    assert tags[0] == "auth" and tags[-1] == "admin"
    used = {tag for _name, operation in _operations(schema) for tag in operation["tags"]}
    assert used <= set(tags)


def test_the_webhook_events_are_in_the_schema_with_their_bodies(schema):
    assert schema["openapi"].startswith("3.1")
    events = schema["webhooks"]
    assert set(events) == {*EVENT_TYPES, WEBHOOK_TEST}
    for event_type, item in events.items():
        body = item["post"]["requestBody"]["content"]["application/json"]
        (example,) = _examples(body)
        assert example["type"] == event_type
        assert example["id"].startswith("evt_") and example["data"]["object"]
    delivered = _examples(events["recharge.delivered"]["post"]["requestBody"]["content"][
        "application/json"
    ])[0]  # fmt: skip
    assert delivered["data"]["object"]["status"] == "delivered"


# -- the error codes and their pages -------------------------------------------------------------
def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _raised_codes() -> set[str]:
    """Every code the code base can answer with: the ApplicationError subclasses, every
    ``code="…"`` given to one of them or to problem_response, and the exception handler's."""
    get_resolver().url_patterns  # imports every view, and what they raise
    for config in apps.get_app_configs():
        if (ROOT / config.name / "errors.py").exists():
            importlib.import_module(f"{config.name}.errors")
    classes = {ApplicationError, *_subclasses(ApplicationError)}
    codes = {cls.code for cls in classes}
    callables = {cls.__name__ for cls in classes} | {"problem_response"}
    for config in apps.get_app_configs():
        folder = ROOT / config.name
        if not str(config.path).startswith(str(ROOT)):
            continue
        for source in folder.rglob("*.py"):
            if "migrations" in source.parts:
                continue
            for node in ast.walk(ast.parse(source.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name not in callables:
                    continue
                for keyword in node.keywords:
                    if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                        codes.add(keyword.value.value)
    handler = ast.parse((ROOT / "reseller" / "errors.py").read_text())
    literals = {
        node.value
        for node in ast.walk(handler)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    codes |= set(STATUS_CODES.values()) | {"error"}
    codes |= literals & {"invalid_json", "token_invalid", "validation_error", "internal_error"}
    return codes


def test_every_code_we_can_answer_with_has_a_page():
    codes = _raised_codes()
    assert {"insufficient_balance", "ambiguous_credentials", "not_found"} <= codes
    assert sorted(codes - set(PROBLEM_TYPES)) == []
    wrong_status = [
        f"{cls.__name__}: {cls.code} {cls.status}"
        for cls in _subclasses(ApplicationError)
        if cls.status not in PROBLEM_TYPES[cls.code].statuses
    ]
    assert wrong_status == []


@pytest.mark.django_db(transaction=True)
def test_every_error_type_link_opens_on_our_server(live_server, settings):
    settings.SITE_URL = live_server.url
    # A real error: its type is a page of this server.
    request = urllib.request.Request(f"{live_server.url}/api/v1/auth/me")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    body = json.loads(refused.value.read())
    assert body["type"] == f"{live_server.url}/api/v1/docs/errors/not_authenticated"
    for code in sorted(_raised_codes() | {body["code"]}):
        with urllib.request.urlopen(problem_type(code), timeout=10) as page:
            html = page.read().decode()
            assert page.status == 200, code
            assert f"<code>{code}</code>" in html
            assert escape(str(PROBLEM_TYPES[code].when)) in html
    with urllib.request.urlopen(f"{live_server.url}/api/v1/docs/errors/", timeout=10) as index:
        listed = index.read().decode()
    assert all(f'id="{code}"' in listed for code in PROBLEM_TYPES)
    with pytest.raises(urllib.error.HTTPError) as unknown:
        urllib.request.urlopen(problem_type("no_such_code"), timeout=10)
    assert unknown.value.code == 404


def test_the_error_pages_follow_the_language(client):
    client.cookies["django_language"] = "es"
    response = client.get("/api/v1/docs/errors/insufficient_balance")
    assert response.status_code == 200
    assert 'lang="es"' in response.content.decode()

"""Team roles fail closed (accounts/roles.py): every route of the project has a decision, an
area in ROUTES or a reasoned place in ANY_ROLE, and a route nobody decided is the owners' only,
refused to developers and finance on the site and on the API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.roles import ANY_ROLE, ROUTES, UNDECIDED, area_of
from tests.factories import UserFactory
from tests.helpers import bearer


def view_names(resolver: URLResolver, namespace: str = "") -> Iterator[tuple[str, str]]:
    """(view name as the middleware sees it, route) of every URL pattern, recursively."""
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            for name, route in view_names(pattern, inner):
                yield name, f"{pattern.pattern}{route}"
        else:
            assert isinstance(pattern, URLPattern)
            yield f"{namespace}{pattern.name or pattern.lookup_str}", str(pattern.pattern)


def test_every_route_of_the_project_has_a_role_decision():
    routes = list(view_names(get_resolver()))
    assert len(routes) > 100  # the site, the API and the admin were all walked
    undecided = sorted(f"{name}  ({route})" for name, route in routes if area_of(name) == UNDECIDED)
    assert undecided == [], (
        "routes with no role decision: add them to ROUTES (an area) or to ANY_ROLE (with the "
        "reason every role may use them) in accounts/roles.py"
    )


def test_every_open_route_entry_has_a_reason_and_still_names_a_route():
    names = [name for name, _route in view_names(get_resolver())]
    unused = [
        entry
        for entry, _reason in ANY_ROLE
        if not any(
            name.startswith(entry[:-1]) if entry.endswith("*") else name == entry for name in names
        )
    ]
    assert unused == []
    assert [entry for entry, reason in ANY_ROLE if not reason.strip()] == []
    assert [start for start, _area in ROUTES if not any(n.startswith(start) for n in names)] == []


def test_a_name_beside_an_open_one_is_not_opened_by_it():
    assert area_of("accounts:profile") is None
    assert area_of("accounts:profile-export") == UNDECIDED
    assert area_of("auth-me") is None
    assert area_of("auth-me-tokens") == UNDECIDED


@pytest.mark.django_db
@pytest.mark.urls("tests.roles_urls")
@pytest.mark.parametrize("role", ["developer", "finance"])
def test_a_route_without_a_decision_is_refused_to_other_roles_than_owner(client, role):
    owner = UserFactory()
    person = UserFactory(account=owner.account, role=role)
    assert area_of("unclassified-page") == UNDECIDED

    client.force_login(person)
    page = client.get("/unclassified/")
    assert page.status_code == 403
    assert b"unclassified page" not in page.content
    api = client.get("/api/v1/unclassified", **bearer(person))
    assert api.status_code == 403
    assert api["Content-Type"] == "application/problem+json"
    assert api.json()["code"] == "permission_denied"

    client.force_login(owner)
    assert client.get("/unclassified/").content == b"unclassified page"
    assert client.get("/api/v1/unclassified", **bearer(owner)).json() == {"ok": True}
    # An open route stays open to the role.
    client.force_login(person)
    assert client.get("/accounts/profile/").status_code == 200

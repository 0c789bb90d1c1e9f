"""Number lookup through the providers (issue 41; contract section 17, "Number lookup";
docs/catalog.md, "Phone numbers"): each adapter against its fake, and the operator list with
``phone`` detecting a ported number by a provider, falling back to the prefixes within the
budget, caching answers, and never failing because a provider did."""

from __future__ import annotations

import time

import pytest

from tests.factories import OperatorFactory, make_key
from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import client_for
from upstreams.adapters import adapter_for
from upstreams.adapters.base import TransientError, UpstreamOperator
from upstreams.models import Provider

pytestmark = pytest.mark.django_db

OPERATORS = "/api/v1/catalog/operators"
NUMBER = "+525512345678"  # Telcel's range in the fakes and in our prefixes (below)
RELOADLY_TELCEL, RELOADLY_ATT = 341, 342
DTONE_TELCEL, DTONE_ATT = 1450, 1451


def _ranges(reloadly: FakeReloadly, dtone: FakeDTOne, ding: FakeDing) -> None:
    """Every fake gives +52 55… to Telcel, as our prefixes do."""
    reloadly.number_range("5255", RELOADLY_TELCEL)
    dtone.number_range("5255", DTONE_TELCEL)
    ding.number_range("5255", "TLMX")


def _port_to_att(reloadly: FakeReloadly, dtone: FakeDTOne, ding: FakeDing) -> None:
    reloadly.port_number(NUMBER, RELOADLY_ATT)
    dtone.port_number(NUMBER, DTONE_ATT)
    ding.port_number(NUMBER, "ATMX")


def _only(name: str) -> None:
    Provider.objects.exclude(name=name).update(enabled=False)


@pytest.fixture
def prefixed(routed):
    """Our prefixes say +52 55… is Telcel."""
    telcel = routed["telcel"]
    telcel.prefixes = ["55"]
    telcel.save()
    return routed


def _listed(user_api, number: str = NUMBER) -> list[dict]:
    response = user_api.get(OPERATORS, {"phone": number})
    assert response.status_code == 200, response.content
    return response.json()["results"]


# -- each adapter against its fake ------------------------------------------------------------


def test_reloadly_auto_detect_names_the_operator_a_ported_number_is_with(routed, reloadly):
    reloadly.number_range("5255", RELOADLY_TELCEL)
    adapter = adapter_for(Provider.objects.get(name="reloadly-1"))
    found = adapter.lookup(number=NUMBER, country="MX", timeout=2)
    assert [(o.upstream_id, o.country) for o in found] == [(str(RELOADLY_TELCEL), "MX")]
    reloadly.port_number(NUMBER, RELOADLY_ATT)
    assert [o.upstream_id for o in adapter.lookup(number=NUMBER, country="MX", timeout=2)] == [
        str(RELOADLY_ATT)
    ]
    # The national number, as the reference's example writes it, in the path.
    paths = [path for _m, path, _q, _c in reloadly.requests if "auto-detect" in path]
    assert paths[-1] == "/operators/auto-detect/phone/5512345678/countries/MX"
    assert adapter.lookup(number="+525598765432", country="MX", timeout=2) == [
        UpstreamOperator(str(RELOADLY_TELCEL), "Telcel Mexico", "MX")
    ]
    assert adapter.lookup(number="+523312345678", country="MX", timeout=2) == []  # 404


def test_dtone_mobile_number_lookup_keeps_only_the_identified_operator(routed, dtone):
    dtone.number_range("5255", DTONE_TELCEL)
    adapter = adapter_for(Provider.objects.get(name="dtone-1"))
    found = adapter.lookup(number=NUMBER, country="MX", timeout=2)
    assert [(o.upstream_id, o.country) for o in found] == [(str(DTONE_TELCEL), "MX")]
    dtone.port_number(NUMBER, DTONE_ATT)
    found = adapter.lookup(number=NUMBER, country="MX", timeout=2)
    assert [o.upstream_id for o in found] == [str(DTONE_ATT)]  # Telcel listed, not identified
    assert dtone.lookups[NUMBER] == 2
    assert adapter.lookup(number="+523312345678", country="MX", timeout=2) == []


def test_ding_account_lookup_names_the_provider_code(routed, ding):
    ding.number_range("5255", "TLMX")
    adapter = adapter_for(Provider.objects.get(name="ding-1"))
    assert [o.upstream_id for o in adapter.lookup(number=NUMBER, country="MX", timeout=2)] == [
        "TLMX"
    ]
    ding.port_number(NUMBER, "ATMX")
    assert [o.upstream_id for o in adapter.lookup(number=NUMBER, country="MX", timeout=2)] == [
        "ATMX"
    ]
    assert ding.lookups[NUMBER] == 2
    assert adapter.lookup(number="+523312345678", country="MX", timeout=2) == []


@pytest.mark.parametrize("name", ["reloadly-1", "dtone-1", "ding-1"])
def test_an_adapter_lookup_slower_than_its_timeout_is_a_transient_error(
    routed, reloadly, dtone, ding, name
):
    for fake in (reloadly, dtone, ding):
        fake.lookup_delay = 3.0
    adapter = adapter_for(Provider.objects.get(name=name))
    if name == "reloadly-1":
        adapter.lookup(number="+523312345678", country="MX", timeout=5)  # a token first
    started = time.monotonic()
    with pytest.raises(TransientError):
        adapter.lookup(number=NUMBER, country="MX", timeout=0.3)
    assert time.monotonic() - started < 2.0  # the timeout, not the provider's 3 s


# -- the operator list ----------------------------------------------------------------------


def test_a_ported_number_is_detected_by_the_provider_where_prefixes_say_otherwise(
    user_api, prefixed, reloadly, dtone, ding
):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    results = _listed(user_api)
    assert results[0]["id"] == prefixed["att"].public_id
    assert results[0]["detected"] is True and results[0]["detectedBy"] == "provider"
    telcel = next(r for r in results if r["id"] == prefixed["telcel"].public_id)
    assert telcel["detected"] is False and telcel["detectedBy"] is None
    # Providers are asked by priority, then name: the first answer is enough.
    asked = reloadly.lookups[NUMBER] + dtone.lookups[NUMBER] + ding.lookups[NUMBER]
    assert asked == 1


@pytest.mark.parametrize("name", ["reloadly-1", "dtone-1", "ding-1"])
def test_each_provider_alone_detects_the_ported_number(
    user_api, prefixed, reloadly, dtone, ding, name
):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    _only(name)
    results = _listed(user_api)
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["att"].public_id, "provider")


def test_a_provider_slower_than_the_budget_falls_back_to_prefixes_within_it(
    user_api, prefixed, reloadly, dtone, ding, settings
):
    settings.NUMBER_LOOKUP_TIMEOUT_SECONDS = 0.5
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    for fake in (reloadly, dtone, ding):
        fake.lookup_delay = 3.0
    reloadly.lookup_delay = 0.0
    adapter_for(Provider.objects.get(name="reloadly-1")).lookup(
        number="+523312345678", country="MX", timeout=5
    )  # Reloadly's token is fetched before the clock starts
    reloadly.lookup_delay = 3.0
    started = time.monotonic()
    results = _listed(user_api)
    elapsed = time.monotonic() - started
    assert elapsed < 2.5  # the 0.5 s budget and a margin for a busy box, under the 3 s delay
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["telcel"].public_id, "prefix")
    # The next request does not ask again: "nobody answered" is kept for a while. (The
    # first asked one provider, which may count its call late on a busy box: at most one.)
    assert _listed(user_api)[0]["detectedBy"] == "prefix"
    assert all(fake.lookups[NUMBER] <= 1 for fake in (reloadly, dtone, ding))


def test_a_test_key_never_reaches_a_provider_the_prefixes_answer(
    user, prefixed, reloadly, dtone, ding
):
    """Test keys never reach a provider (contract section 6): their number lookup is the
    prefixes'; the account's live key asks the providers."""
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    _key, test = make_key(user, mode="test")
    results = _listed(client_for(test))
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["telcel"].public_id, "prefix")
    assert reloadly.lookups[NUMBER] + dtone.lookups[NUMBER] + ding.lookups[NUMBER] == 0
    _key, live = make_key(user, mode="live")
    results = _listed(client_for(live))
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["att"].public_id, "provider")


def test_answers_are_cached_so_the_provider_is_asked_once(
    user_api, prefixed, reloadly, dtone, ding
):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    _only("dtone-1")
    for _ in range(3):
        assert _listed(user_api)[0]["detectedBy"] == "provider"
    assert dtone.lookups[NUMBER] == 1


def test_without_provider_rows_the_prefixes_answer(user_api, db):
    telcel = OperatorFactory(slug="telcel", name="Telcel", prefixes=["55"])
    OperatorFactory(slug="att", name="AT&T")
    results = _listed(user_api)
    assert (results[0]["id"], results[0]["detected"], results[0]["detectedBy"]) == (
        telcel.public_id,
        True,
        "prefix",
    )
    assert results[1]["detected"] is False and results[1]["detectedBy"] is None


def test_provider_errors_never_fail_the_list(user_api, prefixed, reloadly, dtone, ding):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    reloadly.lookup_status = 500
    dtone.lookup_error = 1009503
    ding.lookup_status = 503
    results = _listed(user_api)
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["telcel"].public_id, "prefix")


def test_an_outage_of_every_provider_leaves_the_prefixes(user_api, prefixed, reloadly, dtone, ding):
    for fake in (reloadly, dtone, ding):
        fake.outage(True)
    results = _listed(user_api)
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["telcel"].public_id, "prefix")


def test_a_failing_provider_gives_way_to_the_next(user_api, prefixed, reloadly, dtone, ding):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    reloadly.lookup_status = 500
    results = _listed(user_api)
    assert (results[0]["id"], results[0]["detectedBy"]) == (prefixed["att"].public_id, "provider")


def test_the_number_first_page_goes_to_the_operator_a_provider_detected(
    client, prefixed, reloadly, dtone, ding
):
    _ranges(reloadly, dtone, ding)
    _port_to_att(reloadly, dtone, ding)
    response = client.get("/catalog/find/", {"phone": NUMBER})
    assert response.status_code == 302
    assert response["Location"].startswith(f"/catalog/MX/{prefixed['att'].slug}/")

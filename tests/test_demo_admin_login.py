"""The demo admin can sign in to the back office after `make run` (issue 32, defect 12):
seed_demo enrols its authenticator and prints the otpauth:// URI beside the password; the
login asks for the code in one field and answers a missing or wrong one in plain words."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from catalog.demo import STAFF_EMAIL, STAFF_PASSWORD
from tests.helpers import rfc6238, secret_of

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


def printed_uri(output: str) -> str:
    uris = re.findall(r"otpauth://totp/\S+", output)
    assert len(uris) == 1, output
    return uris[0]


def test_seed_demo_enrols_the_demo_admins_authenticator_and_prints_it_beside_the_password():
    output = seed()
    device = TOTPDevice.objects.get(user__email=STAFF_EMAIL)
    assert device.confirmed
    uri = printed_uri(output)
    assert uri == device.config_url and "issuer=reseller" in uri
    lines = output.splitlines()
    password_line = next(i for i, line in enumerate(lines) if STAFF_PASSWORD in line)
    uri_line = next(i for i, line in enumerate(lines) if uri in line)
    assert 0 < uri_line - password_line <= 3  # beside the password, not lost in the counts
    # Run again (every `make run`): the same device, so the app already holding it still works.
    again = seed("--qr")
    assert printed_uri(again) == uri and TOTPDevice.objects.filter(user=device.user).count() == 1
    assert "▀" in again or "▄" in again  # the QR code drawn in the terminal for make run


def test_a_code_computed_from_the_printed_uri_logs_the_demo_admin_in():
    secret = secret_of(printed_uri(seed()))
    client = Client()
    response = client.post(
        LOGIN, {"username": STAFF_EMAIL, "password": STAFF_PASSWORD, "otp_token": rfc6238(secret)}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("000000", "That code is not right."),
        ("", "Enter the 6-digit code of your authenticator app"),
        ("not-a-recovery-code", "That code is not right."),
    ],
)
def test_a_wrong_or_missing_code_gets_a_plain_message_and_no_device_list(code, message):
    secret = secret_of(printed_uri(seed()))
    if code == "000000" and rfc6238(secret) == code:  # pragma: no cover - one in a million
        code = "000001"
    client = Client()
    response = client.post(
        LOGIN, {"username": STAFF_EMAIL, "password": STAFF_PASSWORD, "otp_token": code}
    )
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    html = response.content.decode()
    assert message in html
    assert 'name="otp_device"' not in html and "otp_challenge" not in html
    assert "Invalid token" not in html and "select a device" not in html.lower()
    assert STAFF_PASSWORD not in html  # the password is not written back into the page
    assert not code or f'value="{code}"' not in html  # nor the wrong code
    assert 'name="otp_token"' in html and 'autocomplete="one-time-code"' in html


def test_the_login_page_asks_for_the_code_in_spanish():
    client = Client()
    client.cookies["django_language"] = "es"
    html = client.get(LOGIN).content.decode()
    assert "Código de autenticación" in html and 'name="otp_device"' not in html

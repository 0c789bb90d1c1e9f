"""A real localstripe server for the card tests, and what the browser does against it.

The server is a subprocess on 127.0.0.1 with a free port (``--from-scratch``: no state from
earlier runs). ``browser_confirm_setup`` and ``browser_authenticate`` send exactly the requests
that localstripe's Stripe.js sends for ``confirmCardSetup`` and ``confirmCardPayment``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.waiting import WaitTimeout, wait_until

SECRET_KEY = "sk_test_reseller_local"
PUBLISHABLE_KEY = "pk_test_reseller_local"
WEBHOOK_SECRET = "whsec_reseller_local_test"

VISA = "4242424242424242"
THREE_D_SECURE = "4000002500003155"
DECLINED = "4000000000000341"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def localstripe_command() -> str:
    beside = Path(sys.executable).with_name("localstripe")
    if beside.exists():
        return str(beside)
    found = shutil.which("localstripe")
    if not found:
        raise RuntimeError("localstripe is not installed: run scripts/setup.sh")
    return found


class LocalStripe:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> LocalStripe:
        self.process = subprocess.Popen(
            [localstripe_command(), "--port", str(self.port), "--from-scratch"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        process = self.process

        def answers() -> bool:
            try:
                requests.get(f"{self.url}/v1/customers", auth=(SECRET_KEY, ""), timeout=5)
                return True
            except requests.RequestException:  # refused, or a slow first answer (read timeout)
                if process.poll() is not None:
                    raise RuntimeError("localstripe exited at start") from None
                return False

        try:
            wait_until(answers, timeout=20, what="localstripe to start")
        except WaitTimeout:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def register_webhook(self, url: str, secret: str = WEBHOOK_SECRET) -> None:
        requests.post(
            f"{self.url}/_config/webhooks/reseller",
            json={"url": url, "secret": secret},
            timeout=5,
        ).raise_for_status()

    def unregister_webhook(self) -> None:
        requests.delete(f"{self.url}/_config/webhooks/reseller", timeout=5)

    def browser_confirm_setup(
        self, client_secret: str, number: str = VISA, *, authenticate: bool = True
    ) -> dict:
        """``stripe.confirmCardSetup(clientSecret, {payment_method: {card}})``."""
        seti = client_secret.split("_secret_")[0]
        body = requests.post(
            f"{self.url}/v1/setup_intents/{seti}/confirm",
            json={
                "key": PUBLISHABLE_KEY,
                "use_stripe_sdk": True,
                "client_secret": client_secret,
                "payment_method_data": {
                    "type": "card",
                    "card": {"number": number, "exp_month": 12, "exp_year": 2034, "cvc": "123"},
                    "billing_details": {"address": {"postal_code": "42424"}},
                },
            },
            timeout=5,
        ).json()
        if body.get("status") == "requires_action":  # 3-D Secure on the card's setup
            action = "confirm" if authenticate else "cancel"
            body = requests.post(
                f"{self.url}/v1/setup_intents/{seti}/{action}",
                json={
                    "key": PUBLISHABLE_KEY,
                    "use_stripe_sdk": True,
                    "client_secret": client_secret,
                },
                timeout=5,
            ).json()
        return body

    def browser_authenticate(self, client_secret: str, *, success: bool) -> dict:
        """``stripe.confirmCardPayment(clientSecret)``: "Complete" or "Fail authentication"."""
        pi = client_secret.split("_secret_")[0]
        return requests.post(
            f"{self.url}/v1/payment_intents/{pi}/_authenticate?success={str(success).lower()}",
            json={"key": PUBLISHABLE_KEY, "client_secret": client_secret},
            timeout=5,
        ).json()

    def payment_intent(self, pi_id: str) -> dict:
        return requests.get(
            f"{self.url}/v1/payment_intents/{pi_id}", auth=(SECRET_KEY, ""), timeout=5
        ).json()

    def refunds(self, pi_id: str) -> list[dict]:
        body = requests.get(
            f"{self.url}/v1/refunds",
            params={"payment_intent": pi_id},
            auth=(SECRET_KEY, ""),
            timeout=5,
        ).json()
        return body.get("data", [])


def stripe_settings(settings, server: LocalStripe) -> None:
    settings.STRIPE_API_BASE = server.url
    settings.STRIPE_SECRET_KEY = SECRET_KEY
    settings.STRIPE_PUBLISHABLE_KEY = PUBLISHABLE_KEY
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STRIPE_JS_URL = f"{server.url}/js.stripe.com/v3/"
    csp = {key: list(value) for key, value in settings.SECURE_CSP.items()}
    for directive in ("script-src", "connect-src", "frame-src"):
        csp[directive] = [*csp.get(directive, []), server.url]
    settings.SECURE_CSP = csp


@pytest.fixture(scope="session", name="localstripe")
def localstripe_fixture():
    server = LocalStripe().start()
    yield server
    server.stop()


@pytest.fixture(name="stripe_local")
def stripe_local_fixture(settings, localstripe):
    """Point the gateway at the session's localstripe (keys, webhook secret, Stripe.js)."""
    stripe_settings(settings, localstripe)
    return localstripe

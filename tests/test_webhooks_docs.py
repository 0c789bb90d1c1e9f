"""The verification recipes of docs/webhooks.md work against what we send: the Node.js
function and the openssl walk-through accept our signature and refuse a forged one."""

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from webhooks.signature import signature_header

DOC = (Path(__file__).resolve().parent.parent / "docs" / "webhooks.md").read_text()
SECRET = "whsec_docs-example-secret"
BODY = '{"id":"evt_doc","type":"recharge.delivered","data":{"object":{"id":"rch_1","note":"é"}}}'


def block(language: str, after: str) -> str:
    start = DOC.index(after)
    match = re.search(rf"```{language}\n(.*?)```", DOC[start:], re.S)
    assert match, (language, after)
    return match.group(1)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_node_example_verifies_our_signature(tmp_path):
    (tmp_path / "verify.js").write_text(block("js", "### Node.js"))
    header = signature_header(BODY.encode(), [SECRET], int(time.time()))
    script = (
        "const { verifySignature } = require('./verify.js');"
        "const [body, header, secret] = process.argv.slice(1);"
        "const raw = Buffer.from(body, 'utf8');"
        "console.log(verifySignature(raw, header, secret), verifySignature(raw, header, 'whsec_x'),"
        " verifySignature(Buffer.from(body + ' '), header, secret));"
    )
    out = subprocess.run(
        ["node", "-e", script, BODY, header, SECRET],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["true", "false", "false"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_the_openssl_walk_through_verifies_our_signature(tmp_path):
    script = block("sh", "### By hand").replace("SECRET=whsec_…", f"SECRET={SECRET}")
    (tmp_path / "body.json").write_bytes(BODY.encode())
    good = signature_header(BODY.encode(), ["whsec_other", SECRET], int(time.time()))
    for header, expected in [(good, "signature ok"), (good.replace("v1=", "v1=1"), "forged")]:
        out = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env={"HEADER": header, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.splitlines()[0] == expected


@pytest.mark.django_db
def test_the_example_receiver_accepts_our_deliveries(settings, tmp_path):
    """docs/examples/webhook_receiver.py (the README's five commands) verifies and answers 200."""
    import socket
    import sys

    from tests.factories import UserFactory
    from tests.helpers import fund
    from webhooks.delivery import endpoint_drain
    from webhooks.models import Delivery
    from webhooks.services import endpoint_create

    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    user = UserFactory()
    endpoint = endpoint_create(
        account=user.account, url=f"http://127.0.0.1:{port}/hooks", livemode=True
    )
    root = Path(__file__).resolve().parent.parent
    receiver = subprocess.Popen(
        [sys.executable, "docs/examples/webhook_receiver.py", str(port)],
        cwd=root,
        env={"WEBHOOK_SECRET": endpoint.secret, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening" in receiver.stdout.readline()
        fund(user, "7.00")
        endpoint_drain(endpoint.pk)
        assert Delivery.objects.get().state == "succeeded"
        assert receiver.stdout.readline().startswith("wallet.credited evt_")
    finally:
        receiver.kill()
        receiver.wait()


def events_named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)`", text))  # network.transfer.completed


def test_the_readme_and_the_docs_list_every_event_of_the_catalogue():
    """The README's list lacked ``batch.completed`` (issue 43, item 13)."""
    from webhooks.catalogue import EVENT_TYPES, WEBHOOK_TEST

    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    section = readme[readme.index("### Webhooks") :]
    listed = section[: section.index("Endpoints are managed")]
    assert events_named(listed) == set(EVENT_TYPES)
    table = DOC[DOC.index("## Events") :].split("\n## ")[0]
    rows = set(re.findall(r"^\| `([a-z_]+(?:\.[a-z_]+)+)` \|", table, re.M))
    assert rows == {*EVENT_TYPES, WEBHOOK_TEST}
    contract = (root / "docs" / "contract.md").read_text()
    bullet = contract[contract.index("- Events `") :].split("\n- ")[0]
    assert events_named(bullet) == set(EVENT_TYPES)

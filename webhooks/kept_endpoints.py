"""The enabled webhook endpoints of (account, livemode) pairs, kept per process for the
processor's batches (``webhooks.outbox.subscribers_many``; reseller/kept.py): each batch
that moves recharges asks which of their accounts subscribe, the same few rows batch after
batch. Kept for at most ``CATALOG_CACHE_SECONDS`` under a version that every write to an
endpoint renews (``endpoints_changed``: the ORM's signals, connected in ``webhooks.apps``,
and the automatic disabling's ``update()`` in ``webhooks.delivery``), so an endpoint added,
changed, disabled or deleted is followed from the next batch of every worker.

The kept endpoints are shared by a process's threads as they are: only their id and the
events they want are read (deliveries are written for them; nothing writes to them). They
are read with ``only()``: reading any other field would load it into the shared instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reseller import kept

if TYPE_CHECKING:
    from webhooks.models import WebhookEndpoint

VERSION_KEY = "webhooks:version"

# By (account id, livemode): its enabled endpoints (an empty tuple: none).
endpoints_kept: kept.Kept[tuple[int, bool], tuple[WebhookEndpoint, ...]] = kept.Kept(VERSION_KEY)


def endpoints_changed() -> None:
    """A new version of the endpoints, now and again after the commit."""
    endpoints_kept.changed()

"""Every app's admin registrations live here, on ``BackofficeAdminSite`` (the default site).

Django's autodiscovery imports this package; importing the modules below registers them.
No app outside backoffice imports the back office: it imports the apps' models and services.
"""

from backoffice.admin import (
    accounts,
    catalog,
    emails,
    fraud,
    network_money,
    orders,
    recipients,
    reconciliation,
    requestlog,
    staff_actions,
    upstreams,
    wallet,
    webhooks,
)

__all__ = [
    "accounts",
    "catalog",
    "emails",
    "fraud",
    "network_money",
    "orders",
    "recipients",
    "reconciliation",
    "requestlog",
    "staff_actions",
    "upstreams",
    "wallet",
    "webhooks",
]

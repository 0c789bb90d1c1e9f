"""The staff admin site: Django's admin plus the dashboard at /admin/dashboard/ and the
margin page at /admin/margin/.

Outside the ``backoffice.admin`` package on purpose: Django builds the default site lazily on
the first registration, and that import must not trigger the registrations themselves.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django_otp.admin import OTPAdminSite

from accounts.forms import AdminLoginForm
from backoffice import views

# What staff read for third-party models whose names are not ours to translate (django-otp's
# are plain English; simplejwt's read "Outstanding Tokens"): (app label, model) → plural.
THIRD_PARTY_NAMES = {
    ("otp_totp", "TOTPDevice"): _("Authenticators"),
    ("otp_static", "StaticDevice"): _("Recovery code sets"),
    ("token_blacklist", "OutstandingToken"): _("Issued tokens"),
    ("token_blacklist", "BlacklistedToken"): _("Revoked tokens"),
}
THIRD_PARTY_APPS = {"token_blacklist": _("API sign-in tokens")}


class BackofficeAdminSite(OTPAdminSite):
    """The default admin site (see ``BackofficeAdminConfig``); every app registers on it.

    Staff sign in with a second factor (django-otp): a session whose user was not verified by
    their authenticator (or a recovery code) is treated as not staff. Logins are limited like
    the site's and the API's.
    """

    site_header = "reseller"
    site_title = format_lazy("reseller · {}", _("Back office"))
    index_title = _("Back office")
    login_form = AdminLoginForm
    login_template = "backoffice/login.html"

    def __init__(self, name: str = "admin") -> None:
        super().__init__(name)

    def get_urls(self) -> list[URLResolver | URLPattern]:
        dashboard = self.admin_view(lambda request: views.dashboard(request, admin_site=self))
        margin = self.admin_view(lambda request: views.margin(request, admin_site=self))
        return [
            path("dashboard/", dashboard, name="dashboard"),
            path("margin/", margin, name="margin"),
            *super().get_urls(),
        ]

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        for app in apps:
            app["name"] = THIRD_PARTY_APPS.get(app["app_label"], app["name"])
            for model in app["models"]:
                key = (app["app_label"], model["object_name"])
                model["name"] = THIRD_PARTY_NAMES.get(key, model["name"])
            app["models"].sort(key=lambda model: str(model["name"]).lower())
        apps.sort(key=lambda app: str(app["name"]).lower())
        return apps

    def app_index(self, request, app_label, extra_context=None):
        if app_label in THIRD_PARTY_APPS:
            title = _("%(app)s administration") % {"app": THIRD_PARTY_APPS[app_label]}
            extra_context = {"title": title, **(extra_context or {})}
        return super().app_index(request, app_label, extra_context)

"""The staff admin site: Django's admin plus the dashboard at /admin/dashboard/ and the
margin page at /admin/margin/.

Outside the ``backoffice.admin`` package on purpose: Django builds the default site lazily on
the first registration, and that import must not trigger the registrations themselves.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.urls import URLPattern, URLResolver, path, re_path, reverse
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

# Models that moved app with their tables (the migrations orders 0011 and 0012): their admin
# address moved with their app label. (old app label, model name) → new app label. Staff
# bookmarks of the old addresses get a permanent redirect (docs/backoffice.md, "Addresses").
MOVED_MODELS = {
    ("orders", "payment"): "payments",
    ("orders", "recharge"): "recharges",
    ("orders", "rechargeevent"): "recharges",
    ("orders", "cardcheckout"): "checkout",
    ("orders", "stripeevent"): "checkout",
}


class MovedRedirect(HttpResponsePermanentRedirect):
    """301 for a GET or HEAD (a bookmark); 308 for anything else, which keeps the method and
    the body (a form posted from a page opened before the move)."""

    def __init__(self, to: str, *, keep_method: bool) -> None:
        super().__init__(to)
        if keep_method:
            self.status_code = 308


def moved_model_redirect(request: HttpRequest, *, old: str, new: str) -> MovedRedirect:
    """The same address under the model's new app: list, change, history or delete page, its
    id and its query string (filters, search, page) kept."""
    rest = request.get_full_path()[len(old) :]
    return MovedRedirect(new + rest, keep_method=request.method not in ("GET", "HEAD"))


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
            *self._moved_model_urls(),
            *super().get_urls(),
        ]

    def _moved_model_urls(self) -> list[URLPattern]:
        """Before the admin's own: its catch-all would answer 404 for the old app label."""
        urls = []
        for (old_app, model), new_app in MOVED_MODELS.items():

            def redirect(request, *, old_app=old_app, new_app=new_app, model=model):
                index = reverse(f"{self.name}:index")
                return moved_model_redirect(
                    request,
                    old=f"{index}{old_app}/{model}/",
                    new=reverse(f"{self.name}:{new_app}_{model}_changelist"),
                )

            urls.append(re_path(rf"^{old_app}/{model}/", redirect))
        return urls

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

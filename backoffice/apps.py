from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.utils.translation import gettext_lazy as _


class BackofficeConfig(AppConfig):
    name = "backoffice"
    verbose_name = _("Back office")


class BackofficeAdminConfig(admin_apps.AdminConfig):
    """Django's admin, served by our site class (it adds the staff dashboard)."""

    default = False  # named explicitly in INSTALLED_APPS; BackofficeConfig is this module's default
    default_site = "backoffice.site.BackofficeAdminSite"

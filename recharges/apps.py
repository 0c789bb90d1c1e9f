from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RechargesConfig(AppConfig):
    name = "recharges"
    verbose_name = _("Recharges")

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReconciliationConfig(AppConfig):
    name = "reconciliation"
    verbose_name = _("Reconciliation with providers")

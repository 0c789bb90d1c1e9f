from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = _("Upstream providers")

from django.apps import AppConfig


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = "Upstream providers"

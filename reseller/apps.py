from django.apps import AppConfig


class ResellerConfig(AppConfig):
    name = "reseller"
    verbose_name = "reseller core"

    def ready(self) -> None:
        from reseller import schema  # noqa: F401  (registers the OpenAPI extensions)

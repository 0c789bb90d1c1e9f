import os
import sys

from django.apps import AppConfig


class ResellerConfig(AppConfig):
    name = "reseller"
    verbose_name = "reseller core"

    def ready(self) -> None:
        from django.conf import settings
        from django.urls import register_converter

        from reseller.converters import PublicIdConverter

        register_converter(PublicIdConverter, "id")

        from reseller.metrics import metrics_folder_prepare

        # Every process that counts starts here (gunicorn's and Celery's workers, manage.py):
        # the multiprocess folder is made or refused before anything counts.
        metrics_folder_prepare()

        from reseller import schema  # noqa: F401  (registers the OpenAPI extensions)

        serving = "runserver" in sys.argv and (
            os.environ.get("RUN_MAIN") == "true" or "--noreload" in sys.argv
        )
        if serving and settings.CELERY_TASK_ALWAYS_EAGER and settings.TASKS_IN_PROCESS_THREADED:
            from reseller.tasks import start_in_process_beat

            start_in_process_beat()

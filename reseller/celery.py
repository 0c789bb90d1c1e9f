"""The Celery app. With no CELERY_BROKER_URL, settings make every task run in-process."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.local")

app = Celery("reseller")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

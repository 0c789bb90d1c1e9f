"""The embedded default for a developer's machine: DEBUG on unless the environment says no."""

from reseller.env import env

from .base import *  # noqa: F403
from .base import refuse_insecure_production

DEBUG = env.bool("DEBUG", default=True)
refuse_insecure_production(DEBUG, SECRET_KEY)  # noqa: F405
# Static files are served from the source folders in development; no collectstatic needed.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

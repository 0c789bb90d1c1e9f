"""Production: DEBUG off, secrets required, HTTPS everywhere."""

from reseller.env import env

from .base import *  # noqa: F403
from .base import refuse_insecure_production

DEBUG = env.bool("DEBUG", default=False)
refuse_insecure_production(DEBUG, SECRET_KEY)  # noqa: F405

SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True

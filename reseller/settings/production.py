"""Production: DEBUG off, secrets required, HTTPS everywhere."""

from reseller.env import env

from .base import *  # noqa: F403
from .base import LOG_FORMATS, LOGGING, mailers_from_env, refuse_insecure_production

DEBUG = env.bool("DEBUG", default=False)
refuse_insecure_production(DEBUG, SECRET_KEY)  # noqa: F405

# Email goes to an SMTP server: EMAIL_URL, else a relay on this host (never the console).
MAILERS = mailers_from_env("smtp://localhost:25")

SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True

# Logs: one JSON object per line unless LOG_FORMAT=human (docs/operations.md, "Logs").
LOG_FORMAT = env.str("LOG_FORMAT", default="json")
LOGGING["handlers"]["console"]["formatter"] = LOG_FORMATS.get(LOG_FORMAT, "json")

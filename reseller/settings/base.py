"""Settings shared by every environment; every value that varies comes from reseller.env."""

from datetime import timedelta
from typing import Any
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

from reseller.dbconfig import database_pool_enable
from reseller.env import BASE_DIR, INSECURE_SECRET_KEY, env

# The site's templates, static files and translations live inside the reseller package, so an
# installed copy (pip install .) carries them and finds them next to its code.
PACKAGE_DIR = BASE_DIR / "reseller"

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default=INSECURE_SECRET_KEY)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# Addresses of reverse proxies whose X-Forwarded-For we believe (docs/contract.md §3).
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
# GET /metrics (docs/operations.md): a bearer token, and/or the addresses or networks that
# may read it; with neither, loopback callers only.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_IPS = env.list("METRICS_ALLOWED_IPS", default=[])
# METRICS_ENABLED=false: no request counting middleware and no /metrics (404). On by default;
# off is what the bench compares the cost of metrics with.
METRICS_ENABLED = env.bool("METRICS_ENABLED", default=True)

INSTALLED_APPS = [
    "backoffice.apps.BackofficeAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework_simplejwt.token_blacklist",
    "django_otp",
    # Two third-party apps under our names for them in the back office (translated).
    "backoffice.third_party_apps.OtpTotpConfig",
    "backoffice.third_party_apps.OtpStaticConfig",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_countries",  # the ISO 3166-1 list, with country names in es and fr
    "reseller",
    "accounts",
    "catalog",
    "orders",
    "checkout",
    "payments",
    "recharges",
    "sandbox",
    "wallet",
    "backoffice",
    "site_pages",
    "webhooks",
    "emails",
    "recipients",
    "requestlog",
    "upstreams",
    "books",
    "reconciliation",
    "metrics",
    "network",
]

MIDDLEWARE = [
    # Outermost: counts and times every answer, the other middleware's included.
    *(["reseller.metrics.MetricsMiddleware"] if METRICS_ENABLED else []),
    "reseller.middleware.RequestIdMiddleware",
    "requestlog.middleware.RequestLogMiddleware",
    "reseller.middleware.NulByteMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "reseller.middleware.TimeZoneMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    # Before the roles: a suspended account's session is refused whatever the route's area.
    "accounts.suspension.SuspendedAccountMiddleware",
    "accounts.roles.RolePolicyMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "reseller.middleware.ApiProblemMiddleware",
]

ROOT_URLCONF = "reseller.urls"
WSGI_APPLICATION = "reseller.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Ahead of the apps' own folders: templates/admin/ overrides the admin's pages.
        "DIRS": [PACKAGE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    {
        # Plain text (email bodies and subjects): nothing is HTML-escaped, so an apostrophe
        # in a name reads as one (emails.services renders .txt templates with it).
        "NAME": "text",
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [PACKAGE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"autoescape": False},
    },
]

# Embedded default: a SQLite file next to the code. DATABASE_URL selects PostgreSQL.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"].setdefault("ATOMIC_REQUESTS", False)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several threads of the development server write; wait for the lock instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
else:
    DATABASE_OPTIONS = DATABASES["default"].setdefault("OPTIONS", {})
    # Behind PgBouncer in transaction mode (docker-compose's pgbouncer, docs/operations.md):
    # no server-side cursors, no statements prepared on the server.
    DATABASE_PGBOUNCER = env.bool("DATABASE_PGBOUNCER", default=False)
    # Statements prepared on the server: bound there, and prepared by psycopg from their
    # second use on a connection, so PostgreSQL parses and plans the hot paths' statements
    # once per connection instead of at every request (docs/performance.md). Off by default
    # behind PgBouncer (on again only with its max_prepared_statements, PgBouncer 1.21+).
    if env.bool("DATABASE_PREPARED_STATEMENTS", default=not DATABASE_PGBOUNCER):
        DATABASE_OPTIONS.setdefault("server_side_binding", True)
        DATABASE_OPTIONS.setdefault("prepare_threshold", 1)
    # Unset: no pool, except in a Celery worker of more than 20 threads, which sizes one from
    # its concurrency before connecting (reseller/dbconfig.py); 0: no pool, on purpose.
    _POOL_SIZE = env.str("DATABASE_POOL_SIZE", default="").strip()  # empty: unset
    DATABASE_POOL_SIZE: int | None = int(_POOL_SIZE) if _POOL_SIZE else None
    DATABASE_POOL_TIMEOUT_SECONDS = env.float("DATABASE_POOL_TIMEOUT_SECONDS", default=30.0)
    if DATABASE_POOL_SIZE:
        # A process with many threads (the processor's worker) shares a few connections: a
        # thread borrows one for a transaction and gives it back before a provider call
        # (reseller/db.py).
        database_pool_enable(
            DATABASES["default"], DATABASE_POOL_SIZE, timeout=DATABASE_POOL_TIMEOUT_SECONDS
        )
    else:
        DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASE_PGBOUNCER:
        # A server-side cursor lives in its server connection, which the next transaction may
        # not have (QuerySet.iterator() outside a transaction). Advisory locks are taken per
        # transaction only (reseller/db.py): a session-level one would stay with the server
        # connection, held for whichever client it serves next.
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

# Cache and rate limits: Redis when REDIS_URL is set (shared by every process), else memory.
REDIS_URL = env.str("REDIS_URL", default="")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "reseller.cache.RedisCache",  # Django's, its clients kept
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="reseller"),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("es", _("Spanish")), ("fr", _("French"))]
# Named here, not only as the reseller app's folder, so these catalogs win over Django's and
# the other apps' translations of the same strings (makemessages also writes here).
LOCALE_PATHS = [PACKAGE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# reseller/static/ is found as the reseller app's static folder (AppDirectoriesFinder); also
# listing it in STATICFILES_DIRS would make collectstatic see every file twice.
STATICFILES_DIRS: list[str] = []
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:profile"
LOGOUT_REDIRECT_URL = "home"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Stripe: card checkout and card top-ups (payments.gateway, docs/payments.md).
STRIPE_API_BASE = env.str("STRIPE_API_BASE", default="")  # a local fake Stripe (localstripe)
STRIPE_SECRET_KEY = env.str("STRIPE_SECRET_KEY", default="")
STRIPE_PUBLISHABLE_KEY = env.str("STRIPE_PUBLISHABLE_KEY", default="")
STRIPE_WEBHOOK_SECRET = env.str("STRIPE_WEBHOOK_SECRET", default="")
# Stripe.js comes from the fake server when STRIPE_API_BASE points at localstripe.
STRIPE_JS_URL = (
    f"{STRIPE_API_BASE.rstrip('/')}/js.stripe.com/v3/"
    if STRIPE_API_BASE
    else "https://js.stripe.com/v3/"
)
CARD_CHECKOUT_VALIDITY_MINUTES = env.int("CARD_CHECKOUT_VALIDITY_MINUTES", default=15)
# Card purchase limits (checkout.limits, docs/fraud.md): counted over the last 24 hours.
# CARD_LIMITS_DEMO (`make run` sets it when it starts localstripe) gives every limit not set in
# the environment its demo value (the second), so a demo pays many times from one machine and
# one test card; never with a live Stripe key (refused below): production keeps the first.
CARD_LIMITS_DEMO = env.bool("CARD_LIMITS_DEMO", default=False)
if CARD_LIMITS_DEMO and STRIPE_SECRET_KEY.startswith(("sk_live_", "rk_live_")):
    raise ImproperlyConfigured(
        "CARD_LIMITS_DEMO raises the card fraud limits for a demo in test mode; refusing to "
        "start with it and a live Stripe key (docs/fraud.md)."
    )


def _card_limit(name: str, default: int, demo: int) -> int:
    return env.int(name, default=demo if CARD_LIMITS_DEMO else default)


CARD_LIMIT_NEW_ACCOUNT_DAYS = env.int("CARD_LIMIT_NEW_ACCOUNT_DAYS", default=7)
CARD_LIMIT_NEW_ACCOUNT_PER_DAY = _card_limit("CARD_LIMIT_NEW_ACCOUNT_PER_DAY", 3, 100)
CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY = _card_limit(
    "CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY", 50, 5000
)
CARD_LIMIT_PER_NUMBER_PER_DAY = _card_limit("CARD_LIMIT_PER_NUMBER_PER_DAY", 5, 200)
CARD_LIMIT_PER_CARD_PER_DAY = _card_limit("CARD_LIMIT_PER_CARD_PER_DAY", 5, 200)
# Beyond the contract's five (docs/fraud.md): any account per hour, one client address per day
# and per hour (all accounts together), and the amount of an account's first card payment (EUR).
CARD_LIMIT_PER_ACCOUNT_PER_HOUR = _card_limit("CARD_LIMIT_PER_ACCOUNT_PER_HOUR", 10, 100)
# Loose: a mobile carrier's NAT puts many honest buyers behind one address, and section 16's
# per-card and per-number limits already hold a fraudster across accounts.
CARD_LIMIT_PER_ADDRESS_PER_DAY = _card_limit("CARD_LIMIT_PER_ADDRESS_PER_DAY", 300, 1000)
CARD_LIMIT_PER_ADDRESS_PER_HOUR = _card_limit("CARD_LIMIT_PER_ADDRESS_PER_HOUR", 100, 200)
# At most the contract's 50 EUR a day for a new account: a first payment of up to 50 EUR is
# one the contract allows (section 16); this cap is an old account's first card payment.
CARD_LIMIT_FIRST_PURCHASE_AMOUNT = _card_limit("CARD_LIMIT_FIRST_PURCHASE_AMOUNT", 50, 5000)
# A card payment or top-up above this many EUR asks for 3-D Secure (request_three_d_secure "any").
CARD_3DS_ABOVE_EUR = env.int("CARD_3DS_ABOVE_EUR", default=30)
# A guest's card purchases (no account: docs/fraud.md), per email, client address and card.
CARD_LIMIT_GUEST_PER_DAY = _card_limit("CARD_LIMIT_GUEST_PER_DAY", 2, 100)
CARD_LIMIT_GUEST_AMOUNT_PER_DAY = _card_limit("CARD_LIMIT_GUEST_AMOUNT_PER_DAY", 30, 5000)

# Content Security Policy (Django's own middleware): only our origin, plus the Stripe origin
# that Stripe.js needs.
_STRIPE_ORIGINS = ["https://js.stripe.com", "https://api.stripe.com"]
if STRIPE_API_BASE:
    _STRIPE_ORIGINS.append(STRIPE_API_BASE.rstrip("/"))
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'", *_STRIPE_ORIGINS],
    "connect-src": ["'self'", *_STRIPE_ORIGINS],
    "frame-src": ["'self'", *_STRIPE_ORIGINS],
    "img-src": ["'self'", "data:"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}

# Recharges: the upstream airtime provider (upstreams.adapters) and the processor.
AIRTIME_PROVIDER = env.str("AIRTIME_PROVIDER", default="simulator")
WAITLIST_HORIZON_HOURS = env.int("WAITLIST_HORIZON_HOURS", default=72)

# Reseller networks (contract section 18): how many levels an account's network may have (the
# top account is level 1: by default top -> agent -> agent's agent).
NETWORK_MAX_DEPTH = env.int("NETWORK_MAX_DEPTH", default=3)
# How long a process may keep the products an order asks for (catalog/cache.py): any change
# to the catalog is seen at once regardless; 0 turns the copy off.
CATALOG_CACHE_SECONDS = env.int("CATALOG_CACHE_SECONDS", default=30)
# Number lookup (docs/catalog.md, "Phone numbers"; contract section 17): the countries whose
# numbers are asked of the providers' lookup even when our prefixes name an operator (they
# port numbers between operators; a number our prefixes cannot tell is asked in any country),
# how long an answer is kept, how long "no provider knew" is kept, and the budget of one
# request: past it the prefixes answer.
NUMBER_LOOKUP_COUNTRIES = env.list(
    "NUMBER_LOOKUP_COUNTRIES",
    default=["BR", "CO", "DO", "GH", "IN", "KE", "MX", "NG", "PH"],
)
NUMBER_LOOKUP_CACHE_SECONDS = env.int("NUMBER_LOOKUP_CACHE_SECONDS", default=86400)
NUMBER_LOOKUP_MISS_SECONDS = env.int("NUMBER_LOOKUP_MISS_SECONDS", default=300)
NUMBER_LOOKUP_TIMEOUT_SECONDS = env.float("NUMBER_LOOKUP_TIMEOUT_SECONDS", default=2.0)

# Where customers send bank-transfer top-ups, shown with each request's reference. Without an
# IBAN the site offers no bank transfer (a request nobody can pay is worse than none).
BANK_TRANSFER_BENEFICIARY = env.str("BANK_TRANSFER_BENEFICIARY", default="")
BANK_TRANSFER_IBAN = env.str("BANK_TRANSFER_IBAN", default="")
BANK_TRANSFER_BIC = env.str("BANK_TRANSFER_BIC", default="")
# Rules of the simulator (upstreams.adapters.simulator): None = its built-in endings.
AIRTIME_SIMULATOR_RULES = None
AIRTIME_SIMULATOR_LATENCY_MS = env.int("AIRTIME_SIMULATOR_LATENCY_MS", default=0)
# What the simulator charges as a provider row: this share of a product's retail price.
AIRTIME_SIMULATOR_COST_PERCENT = env.int("AIRTIME_SIMULATOR_COST_PERCENT", default=92)
RELOADLY_CLIENT_ID = env.str("RELOADLY_CLIENT_ID", default="")
RELOADLY_CLIENT_SECRET = env.str("RELOADLY_CLIENT_SECRET", default="")
RELOADLY_BASE_URL = env.str("RELOADLY_BASE_URL", default="https://topups-sandbox.reloadly.com")
RELOADLY_AUTH_URL = env.str("RELOADLY_AUTH_URL", default="https://auth.reloadly.com")
RELOADLY_TIMEOUT_SECONDS = env.float("RELOADLY_TIMEOUT_SECONDS", default=10.0)
# Back-pressure (upstreams/semaphore.py): calls in flight to AIRTIME_PROVIDER, all workers
# together (0: no ceiling; a provider row has its own), and how long a worker thread waits
# for a slot before handing its recharge back for later.
PROVIDER_MAX_IN_FLIGHT = env.int("PROVIDER_MAX_IN_FLIGHT", default=200)
PROVIDER_SLOT_WAIT_SECONDS = env.float("PROVIDER_SLOT_WAIT_SECONDS", default=5.0)
# Upstream providers as rows (upstreams/, docs/providers.md; docs/contract.md §14): how long
# one call may take before the recharge is settled by looking it up, the balance under which
# staff are told, and the circuit breaker: failures in a row that open it, how long it stays
# open, a call slower than this counts as a failure, and the 15-minute success rate under
# which a provider shows as degraded.
PROVIDER_TIMEOUT_SECONDS = env.float("PROVIDER_TIMEOUT_SECONDS", default=30.0)
PROVIDER_BALANCE_ALERT = env.float("PROVIDER_BALANCE_ALERT", default=100.0)
PROVIDER_CIRCUIT_FAILURES = env.int("PROVIDER_CIRCUIT_FAILURES", default=5)
PROVIDER_CIRCUIT_COOLDOWN_SECONDS = env.int("PROVIDER_CIRCUIT_COOLDOWN_SECONDS", default=30)
PROVIDER_CIRCUIT_SLOW_SECONDS = env.float("PROVIDER_CIRCUIT_SLOW_SECONDS", default=10.0)
PROVIDER_DEGRADED_BELOW = env.float("PROVIDER_DEGRADED_BELOW", default=0.9)
# Where providers' callbacks may come from (addresses or networks, e.g. DT One's published
# ranges); empty: anywhere (a callback is never trusted: it only asks for a look-up).
PROVIDER_CALLBACK_ALLOWED_IPS = env.list("PROVIDER_CALLBACK_ALLOWED_IPS", default=[])
# Products created by a catalog sync are priced this much over their cheapest route's cost
# until staff set a price rule (docs/providers.md, "Catalog sync").
PROVIDER_DEFAULT_MARKUP_PERCENT = env.float("PROVIDER_DEFAULT_MARKUP_PERCENT", default=10.0)
# A product with routes whose price leaves less than this over its cheapest healthy route's
# cost is not offered (docs/pricing.md).
PRICE_MIN_MARGIN_PERCENT = env.float("PRICE_MIN_MARGIN_PERCENT", default=3.0)
# Without a broker: run tasks on a thread pool of the web process (False: inline, for tests),
# of this many threads (reseller/tasks.py).
TASKS_IN_PROCESS_THREADED = env.bool("TASKS_IN_PROCESS_THREADED", default=True)
TASKS_IN_PROCESS_THREADS = 4
# How long a recharge may sit in a state before the sweeper looks at it again.
RECHARGE_STUCK_QUEUED_SECONDS = env.int("RECHARGE_STUCK_QUEUED_SECONDS", default=60)
RECHARGE_STUCK_DISPATCHED_SECONDS = env.int("RECHARGE_STUCK_DISPATCHED_SECONDS", default=300)
RECHARGE_MAX_ATTEMPTS = env.int("RECHARGE_MAX_ATTEMPTS", default=8)
RECHARGE_SWEEP_INTERVAL_SECONDS = env.float("RECHARGE_SWEEP_INTERVAL_SECONDS", default=30.0)
# The processor's batches (reseller/batching.py): at most this many recharges' claims, or
# answers, written in one transaction by one thread of a worker process (1: one by one).
RECHARGE_BATCH_MAX = env.int("RECHARGE_BATCH_MAX", default=100)
# Fair dispatch (docs/processor.md): an order of at most DISPATCH_DIRECT_MAX recharges is
# published at once (unless its account has a backlog); a larger one waits in its account's
# lane, of which at most DISPATCH_ACCOUNT_SHARE messages are published and unclaimed at a time.
DISPATCH_DIRECT_MAX = env.int("DISPATCH_DIRECT_MAX", default=20)
# Default: half the provider ceiling (PROVIDER_MAX_IN_FLIGHT), at most 100. Another account's
# recharge competes for a provider slot with one share of each backlog: half a ceiling is a
# quarter second's wait at 500 ms a call, and still keeps the ceiling full for the account
# alone (its lane is topped up as recharges are taken). At most 100, one worker process's
# threads (docker-compose): at 20 under a ceiling of 200, a lone 100-recharge order had only
# 44 calls in flight where 100 threads were free. Measured: docs/performance.md, "fair".
# Without a broker (make run) the threads are the in-process pool's few: a share of 100 there
# put another account's order behind 100 of a batch's recharges (26 s at 1 s a call), so the
# share is the pool, which a lone account still fills.
# Celery's broker (read here for the share; its settings are below): none means every task
# runs in this process (the embedded default).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
if not CELERY_BROKER_URL:
    _share = TASKS_IN_PROCESS_THREADS
elif PROVIDER_MAX_IN_FLIGHT > 0:
    _share = max(1, min(100, PROVIDER_MAX_IN_FLIGHT // 2))
else:
    _share = 100
DISPATCH_ACCOUNT_SHARE = env.int("DISPATCH_ACCOUNT_SHARE", default=_share)
if DISPATCH_ACCOUNT_SHARE < 1 or DISPATCH_DIRECT_MAX < 0:
    raise ImproperlyConfigured(
        "DISPATCH_ACCOUNT_SHARE must be at least 1 and DISPATCH_DIRECT_MAX at least 0."
    )

# Celery: no broker configured (CELERY_BROKER_URL, above) means every task runs in-process
# (the embedded default).
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://"
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Kombu's Redis transport, keeping its client between publishes (reseller/broker.py).
    CELERY_BROKER_TRANSPORT = "reseller.broker:Transport"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 120
CELERY_TASK_SOFT_TIME_LIMIT = 90
# The sweeper takes over a dispatched recharge left quiet this long (docs/processor.md, step 1):
# shorter than a task may run, and a call still on its way could be asked about, found nowhere
# and sent again.
if RECHARGE_STUCK_DISPATCHED_SECONDS <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"RECHARGE_STUCK_DISPATCHED_SECONDS must be longer than a task's time limit "
        f"({CELERY_TASK_TIME_LIMIT} s), or a recharge still in flight could be sent twice."
    )
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# Celery's Django fix-up closes the database connection before and after every task unless
# this is set: a new PostgreSQL connection per recharge or delivery. Workers keep theirs like
# gunicorn does (CONN_MAX_AGE, health checks: reseller/celery.py), renewed every 1,000 tasks.
# With a pool (DATABASE_POOL_SIZE) the fix-up's close gives the connection back to the pool.
CELERY_DB_REUSE_MAX = None if "pool" in DATABASES["default"].get("OPTIONS", {}) else 1000
# Task modules outside an app's top-level tasks.py (autodiscovery finds only those).
CELERY_IMPORTS = ["recharges.tasks"]
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_QUEUE", default="celery")
# Unacknowledged messages of a killed worker come back after this; the sweeper is faster.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)
}
# Webhook deliveries have a queue of their own: a slow receiver never delays a recharge.
WEBHOOK_QUEUE = env.str("WEBHOOK_QUEUE", default=f"{CELERY_TASK_DEFAULT_QUEUE}-webhooks")
# Webhook deliveries and email wait on other people's servers: their own queue and worker.
CELERY_TASK_ROUTES = {
    "webhooks.tasks.*": {"queue": WEBHOOK_QUEUE},
    "emails.tasks.*": {"queue": WEBHOOK_QUEUE},
    # Writing the request log tolerates a second's delay too (docs/request-log.md).
    "requestlog.tasks.requestlog_drain_task": {"queue": WEBHOOK_QUEUE},
    "upstreams.tasks.providers_sync_task": {"queue": WEBHOOK_QUEUE},
    "upstreams.tasks.providers_balance_task": {"queue": WEBHOOK_QUEUE},
    "reconciliation.tasks.reconciliation_daily_task": {"queue": WEBHOOK_QUEUE},
    "metrics.tasks.ledger_check_task": {"queue": WEBHOOK_QUEUE},
}
CELERY_BEAT_SCHEDULE = {
    "webhooks-sweep": {
        "task": "webhooks.tasks.webhooks_sweep_task",
        "schedule": float(env.int("WEBHOOK_SWEEP_INTERVAL_SECONDS", default=15)),
    },
    "webhooks-purge": {
        "task": "webhooks.tasks.webhooks_purge_task",
        "schedule": 3600.0,
    },
    "recharges-sweep": {
        "task": "recharges.tasks.recharges_sweep_task",
        "schedule": RECHARGE_SWEEP_INTERVAL_SECONDS,
    },
    "batches-complete": {
        "task": "orders.tasks.batches_complete_task",
        "schedule": 10.0,
    },
    "card-payments-expire": {
        "task": "checkout.tasks.card_payments_expire_task",
        "schedule": 60.0,
    },
    "emails-sweep": {
        "task": "emails.tasks.emails_sweep_task",
        "schedule": 60.0,
    },
    "idempotency-purge": {
        "task": "orders.tasks.idempotency_purge_task",
        "schedule": 3600.0,
    },
    "requestlog-drain": {
        "task": "requestlog.tasks.requestlog_drain_task",
        "schedule": 1.0,
        "options": {"expires": 10.0},  # not a pile of them after the workers were away
    },
    "requestlog-prune": {
        "task": "requestlog.tasks.requestlog_prune_task",
        "schedule": 600.0,
    },
    "providers-sync": {
        "task": "upstreams.tasks.providers_sync_task",
        "schedule": float(env.int("PROVIDER_SYNC_INTERVAL_SECONDS", default=6 * 3600)),
        "options": {"expires": 600.0},
    },
    "providers-balance": {
        "task": "upstreams.tasks.providers_balance_task",
        "schedule": 60.0,
        "options": {"expires": 50.0},
    },
    # Yesterday (UTC) of every provider with a report: once a day, from when beat starts (a
    # second run of a day applies nothing twice).
    "providers-reconcile": {
        "task": "reconciliation.tasks.reconciliation_daily_task",
        "schedule": 24 * 3600.0,
        "options": {"expires": 3600.0},
    },
    # The ledger and books checks, for reseller_ledger_check_ok (docs/operations.md).
    "ledger-check": {
        "task": "metrics.tasks.ledger_check_task",
        "schedule": float(env.int("LEDGER_CHECK_INTERVAL_SECONDS", default=3600)),
        "options": {"expires": 600.0},
    },
}

# Webhooks to resellers (docs/webhooks.md). Private, loopback and metadata targets are
# refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS (development and tests only).
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.bool("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False)
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# The authorities receivers' certificates are checked against: certifi's when empty.
WEBHOOK_CA_FILE = env.str("WEBHOOK_CA_FILE", default="")
WEBHOOK_RETRY_HOURS = env.int("WEBHOOK_RETRY_HOURS", default=72)
WEBHOOK_DISABLE_AFTER_DAYS = env.int("WEBHOOK_DISABLE_AFTER_DAYS", default=5)
WEBHOOK_DRAIN_BUDGET = env.int("WEBHOOK_DRAIN_BUDGET", default=200)
WEBHOOK_DRAIN_LINGER_SECONDS = env.float("WEBHOOK_DRAIN_LINGER_SECONDS", default=1.0)
WEBHOOK_DRAIN_LINGERING_MAX = env.int("WEBHOOK_DRAIN_LINGERING_MAX", default=8)

# The request log of API keys (docs/request-log.md): captured by a middleware; a thread of
# each web process pushes the captures onto a Redis list that a task (beat, every second)
# writes to the table, or without Redis writes them itself; pruned by beat.
REQUEST_LOG_ENABLED = env.bool("REQUEST_LOG_ENABLED", default=True)
REQUEST_LOG_RETENTION_DAYS = env.int("REQUEST_LOG_RETENTION_DAYS", default=30)
REQUEST_LOG_REDIS_KEY = env.str(
    "REQUEST_LOG_REDIS_KEY",
    default=f"{CACHES['default'].get('KEY_PREFIX', 'reseller')}:requestlog",
)

# Staff second factor (docs/security.md): TOTP (RFC 6238) for the admin and staff JWTs, with
# one-use recovery codes. Staff API keys may be held to an IP whitelist by policy.
OTP_TOTP_ISSUER = "reseller"
STAFF_KEYS_REQUIRE_WHITELIST = env.bool("STAFF_KEYS_REQUIRE_WHITELIST", default=False)

# Limits on what a request may send (docs/security.md): a bigger body is 413
# request_too_large, a deeper JSON body 400 invalid_json. Batches of 10,000 lines fit in 5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=5 * 1024 * 1024)
JSON_MAX_DEPTH = env.int("JSON_MAX_DEPTH", default=32)

REST_FRAMEWORK = {
    # The key class comes first: it refuses a key sent with a Bearer token (ambiguous), and as
    # the first class it answers 401 (not 403) with WWW-Authenticate. docs/access.md.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.ApiKeyAuthentication",
        "accounts.authentication.JwtAuthentication",
        "reseller.api.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["djangorestframework_camel_case.render.CamelCaseJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["reseller.api.JsonParser"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "reseller.pagination.PagePagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "reseller.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Per-key request limits (Redis, shared by every process); runs after authentication and
    # permissions, so refused requests use no quota. Views that set their own throttle_classes
    # must keep it (accounts.throttling.RECHARGE_THROTTLE_CLASSES does).
    "DEFAULT_THROTTLE_CLASSES": ["accounts.throttling.ApiKeyRateThrottle"],
    "COERCE_DECIMAL_TO_STRING": True,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SIMPLE_JWT = {
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=15),
    "REFRESH_TOKEN_LIFETIME": timedelta(days=7),
    "ROTATE_REFRESH_TOKENS": True,
    "BLACKLIST_AFTER_ROTATION": True,
    "UPDATE_LAST_LOGIN": True,
    "AUTH_HEADER_TYPES": ("Bearer",),
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "user_id",
}

SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "reseller API",
    "DESCRIPTION": (
        "Airtime recharge platform API. Authenticate server-to-server with an `x-api-key` "
        "header (`rsl_live_…` or `rsl_test_…`), or as a browser with a JWT Bearer token from "
        "`POST /api/v1/auth/login`. Every error is RFC 9457 problem details "
        "(`application/problem+json`) with a stable `code`.\n\n"
        "**Sandbox.** A test key (`rsl_test_…`) works on every endpoint a live key can call, "
        "with the same request bodies, on its own fake EUR balance; no real recharge is ever "
        "sent. Recipient numbers ending in `0002` are rejected, `0003` process for 10 seconds "
        "then succeed, `0004` time out; any other ending succeeds. Going live means replacing "
        "the test key with a live key (`rsl_live_…`): nothing else changes.\n\n"
        "**Idempotency.** `POST /api-access/b2b/recharges` requires an `Idempotency-Key` "
        "header (optional on `POST /wallet/checkout`): a retry with the same key and body "
        "returns the first answer with `Idempotent-Replayed: true` and never charges twice."
    ),
    "VERSION": "v1",
    # 3.1: the events we POST to resellers' endpoints are the schema's ``webhooks``.
    "OAS_VERSION": "3.1.0",
    "WEBHOOKS": "orders.webhook_schema.WEBHOOKS",
    # The reseller's operations first, the back office's last (reseller.schema).
    "SORT_OPERATIONS": "reseller.schema.reseller_first",
    "TAGS": [
        {"name": "auth", "description": "Log in, and the caller's user, account and key."},
        {"name": "catalog", "description": "Countries, operators and recharge products."},
        {"name": "cart", "description": "A cart of recharges, paid later by card or wallet."},
        {"name": "payments", "description": "Quotes, card checkout (web-only) and history."},
        {"name": "wallet", "description": "Balance, statement, wallet checkout, card top-ups."},
        {"name": "b2b", "description": "Recharges and batches for B2B keys, and lookups."},
        {"name": "sandbox", "description": "A test key's balance and simulated recharges."},
        {
            "name": "network",
            "description": "Your network of agents: agents, price lists, transfers and "
            "commissions.",
        },
        {"name": "admin", "description": "The back office: staff only."},
    ],
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "CAMELIZE_NAMES": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "drf_spectacular.contrib.djangorestframework_camel_case.camelize_serializer_fields",
    ],
}

# Email (docs/contract.md §12): EMAIL_URL as django-environ reads it (smtp+tls://user:pass@host:587
# is STARTTLS, smtps:// TLS from the start, consolemail://, filemail:///path); it becomes
# Django 6.1's MAILERS. The embedded default prints to the console.
_EMAIL_OPTIONS = {
    "username": "EMAIL_HOST_USER",
    "password": "EMAIL_HOST_PASSWORD",
    "host": "EMAIL_HOST",
    "port": "EMAIL_PORT",
    "use_tls": "EMAIL_USE_TLS",
    "use_ssl": "EMAIL_USE_SSL",
}


def mailers_from_env(default: str) -> dict[str, Any]:
    """``MAILERS`` from ``EMAIL_URL`` (``default`` when unset)."""
    email = env.email_url("EMAIL_URL", default=default)
    backend = email["EMAIL_BACKEND"]
    if backend.endswith(".smtp.EmailBackend"):
        options = {option: email[key] for option, key in _EMAIL_OPTIONS.items() if key in email}
    elif backend.endswith(".filebased.EmailBackend"):
        # django-environ drops the leading "/" of filemail:///var/mail/reseller (the form the
        # docs give), so the path is read from the URL itself: absolute stays absolute;
        # filemail://dir/sub (a "host") stays relative to the working directory.
        parts = urlsplit(env.str("EMAIL_URL", default=default))
        options = {"file_path": unquote(parts.netloc + parts.path)}
    else:
        options = {}
    return {"default": {"BACKEND": backend, "OPTIONS": options}}


MAILERS = mailers_from_env("consolemail://")
# The site's address as people reach it, for links in email sent by workers (receipts, alerts).
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000")
# PINs are encrypted at rest with these Fernet keys (reseller.crypto, docs/security.md): a
# comma-separated list, the first encrypts and every one decrypts. No default: production
# refuses to start without one once a PIN product exists; make run makes one for development.
FIELD_ENCRYPTION_KEY = env.list("FIELD_ENCRYPTION_KEY", default=[])
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="reseller <no-reply@localhost>")
# A password-reset link works once, for an hour.
PASSWORD_RESET_TIMEOUT = 3600
PASSWORD_RESET_RATE_PER_ADDRESS = env.int("PASSWORD_RESET_RATE_PER_ADDRESS", default=10)
PASSWORD_RESET_RATE_PER_EMAIL = env.int("PASSWORD_RESET_RATE_PER_EMAIL", default=3)

# Login attempts allowed per window, per client address and per email (docs/contract.md §3).
LOGIN_RATE_PER_ADDRESS = env.int("LOGIN_RATE_PER_ADDRESS", default=30)
LOGIN_RATE_PER_EMAIL = env.int("LOGIN_RATE_PER_EMAIL", default=10)
LOGIN_RATE_WINDOW_SECONDS = env.int("LOGIN_RATE_WINDOW_SECONDS", default=300)

# API keys (docs/contract.md sections 3, 6 and 7; docs/access.md). Staff may override the request
# limit and the units per request of one key in the admin.
API_KEY_RATE_LIMIT_PER_MINUTE = env.int("API_KEY_RATE_LIMIT_PER_MINUTE", default=600)
TEST_KEY_RECHARGES_PER_MINUTE = 10
API_KEY_UNITS_PER_REQUEST_LIVE = 100
API_KEY_UNITS_PER_REQUEST_TEST = 20
# last_used_at is written at most this often per key, not on every request.
API_KEY_LAST_USED_RESOLUTION_SECONDS = 60

LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
# human: one readable line; json: one JSON object per line (reseller/logs.py), the production
# default. Every line carries the request id, a task's the id of the request that caused it.
LOG_FORMAT = env.str("LOG_FORMAT", default="human")
LOG_FORMATS = {"human": "plain", "json": "json"}
if LOG_FORMAT not in LOG_FORMATS:
    raise ImproperlyConfigured(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}.")
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "reseller.logs.RequestIdLogFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "reseller.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMATS[LOG_FORMAT],
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.server": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # One line per task at INFO is noise (the sweeper runs every 30 s); failures still log.
        "celery.app.trace": {"level": "WARNING"},
    },
}


def refuse_insecure_production(debug: bool, secret_key: str) -> None:
    """Production must never run with the development secret (docs/contract.md §9)."""
    if not debug and secret_key == INSECURE_SECRET_KEY:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in the environment when DEBUG is false; "
            "refusing to start with the development default."
        )


# The benchmark's floor endpoint (bench.floor, POST /api/v1/_bench/floor): only for bench/run.py.
BENCH_ENDPOINTS = env.bool("BENCH_ENDPOINTS", default=False)
if BENCH_ENDPOINTS:
    INSTALLED_APPS.append("bench.floor")
# Named enums in the schema: a recharge's statuses (the same set wherever they appear).
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    "RechargeStatusEnum": "recharges.models.Recharge.Status",
    "ReconciliationItemKindEnum": "reconciliation.models.ReconciliationItem.Kind",
    "RequiresActionStatusEnum": ["requires_action", "processing"],
    "AgentStatusEnum": "network.agents.STATUSES",
}
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] += [
    "reseller.schema.document_ambiguous_credentials",
    "reseller.schema.document_rate_limited",
    "reseller.schema.camelize_path_parameters",
]

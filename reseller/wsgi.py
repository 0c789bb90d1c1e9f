import os

from django.core.wsgi import get_wsgi_application

from reseller.tracing import tracing_start

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.production")

# Before the middleware chain is built: DjangoInstrumentor adds its own (only when
# OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise nothing is loaded).
tracing_start("web")
application = get_wsgi_application()

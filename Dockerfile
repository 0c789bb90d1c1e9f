# The production image: gunicorn serves the site and API; the same image runs workers and beat.
FROM python:3.13-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=reseller.settings.production
WORKDIR /app
# The production lock: every dependency pinned with its hashes (`make lock` writes it).
COPY requirements/prod.txt ./requirements/prod.txt
RUN pip install --no-cache-dir --require-hashes -r requirements/prod.txt
COPY . .
RUN SECRET_KEY=build-only-collectstatic python manage.py collectstatic --noinput
# uid 1000: deploy/kubernetes runs the pods as that user (runAsUser), with a read-only root.
RUN useradd --create-home --uid 1000 app
# Where the processes' metrics files go (PROMETHEUS_MULTIPROC_DIR, docker-compose.yml): a
# volume mounted here starts owned by the app user.
RUN mkdir -p /var/lib/reseller/metrics && chown app /var/lib/reseller/metrics
USER app
EXPOSE 8000
CMD ["gunicorn", "reseller.wsgi:application", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "2", "--threads", "4", "--keep-alive", "30", "--access-logfile", "-"]

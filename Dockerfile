# The production image: gunicorn serves the site and API; the same image runs workers and beat.
FROM python:3.13-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=reseller.settings.production
WORKDIR /app
COPY pyproject.toml ./
RUN python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml","rb"))["project"]["dependencies"]))' > /tmp/req.txt \
    && pip install --no-cache-dir -r /tmp/req.txt
COPY . .
RUN SECRET_KEY=build-only-collectstatic python manage.py collectstatic --noinput
RUN useradd --create-home app
USER app
EXPOSE 8000
CMD ["gunicorn", "reseller.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4", "--access-logfile", "-"]

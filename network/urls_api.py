"""The network's API (contract section 18): /api/v1/network/…"""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []

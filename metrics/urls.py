from django.urls import path

from metrics import views

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
]

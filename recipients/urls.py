from django.urls import path

from recipients import views

app_name = "recipients"

urlpatterns = [
    path("", views.recipients, name="list"),
    path("save/", views.recipient_save, name="save"),
    path("<id:recipient_id>/delete/", views.recipient_delete, name="delete"),
]

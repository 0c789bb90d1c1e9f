from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("", views.endpoints, name="endpoints"),
    path("new/", views.endpoint_create, name="endpoint-create"),
    path("<id:endpoint_id>/", views.endpoint_detail, name="endpoint"),
    path("<id:endpoint_id>/rotate/", views.endpoint_rotate, name="endpoint-rotate"),
    path("<id:endpoint_id>/test/", views.endpoint_test, name="endpoint-test"),
    path("<id:endpoint_id>/delete/", views.endpoint_delete, name="endpoint-delete"),
    path(
        "<id:endpoint_id>/deliveries/<id:delivery_id>/resend/",
        views.delivery_resend,
        name="delivery-resend",
    ),
]

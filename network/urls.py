"""The site's Network page (contract section 18)."""

from django.urls import path

from network import views

app_name = "network"

urlpatterns = [
    path("", views.agents_page, name="agents"),
    path("transfer/", views.transfer, name="transfer"),
    path("<id:agent_id>/status/", views.agent_status, name="agent-status"),
    path("<id:agent_id>/invite/", views.agent_invite, name="agent-invite"),
]

from django.urls import path, re_path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.index, name="index"),
    path("find/", views.find, name="find"),
    re_path(r"^(?P<code>[A-Za-z]{2})/$", views.country, name="country"),
    # An operator's page (a member's saved names) is a site page: site_pages/urls.py.
]

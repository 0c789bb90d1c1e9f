from django.urls import path, re_path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.index, name="index"),
    path("find/", views.find, name="find"),
    re_path(r"^(?P<code>[A-Za-z]{2})/$", views.country, name="country"),
    re_path(r"^(?P<code>[A-Za-z]{2})/(?P<slug>[-\w]+)/$", views.operator, name="operator"),
]

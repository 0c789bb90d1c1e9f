from django.urls import path

from wallet import views

app_name = "wallet"

urlpatterns = [
    path("", views.wallet, name="wallet"),
    path("bank-transfer/", views.bank_transfer, name="bank-transfer"),
    # The statement page (the period's recharges too) is a site page: site_pages/urls.py.
    path("threshold/", views.threshold, name="threshold"),
    path(
        "statement.csv",
        views.statement_download,
        {"file_format": "csv"},
        name="statement-csv",
    ),
    path(
        "statement.xlsx",
        views.statement_download,
        {"file_format": "xlsx"},
        name="statement-xlsx",
    ),
]

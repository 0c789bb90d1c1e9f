"""Words of Django's admin that its Spanish catalog (Django 6.1) leaves in English: the list's
action button, the action menu's empty choice and the date filter's label ("Run", "- Select an
option -", "Filter by created at" on the recharges list), and the labels a screen reader
reads for a list's search box and pages. Marked here so that ``make messages``
keeps them in the project's catalogs, which Django reads before its own (LOCALE_PATHS)."""

from django.utils.translation import gettext_noop

DJANGO_ADMIN_WORDS = (
    gettext_noop("Run"),
    gettext_noop("- Select an option -"),
    gettext_noop("Filter by %(field_name)s"),
    gettext_noop("Search %(name)s"),
    gettext_noop("Pagination %(name)s"),
)

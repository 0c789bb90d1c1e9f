from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError, NotAuthenticated


class InvalidCredentials(NotAuthenticated):
    default_detail = _("The email or password is incorrect.")


class EmailTaken(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("An account with this email already exists.")

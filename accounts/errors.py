from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions as drf_exceptions

from reseller.errors import ApplicationError, NotAuthenticated, PermissionDenied


class InvalidCredentials(NotAuthenticated):
    default_detail = _("The email or password is incorrect.")


class SecondFactorRequired(NotAuthenticated):
    code = "otp_required"
    default_detail = _(
        "Staff accounts log in with a second factor: send otp, the 6-digit code of your "
        "authenticator app or one of your recovery codes."
    )


class TokenInvalid(NotAuthenticated):
    code = "token_invalid"
    default_detail = _("The token is invalid, expired or already used.")


class EmailTaken(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("An account with this email already exists.")


class SuspendedAbove(PermissionDenied):
    """A resume by an account below the one that suspended (section 18): a parent never lifts
    a suspension its own ancestor or staff made."""

    default_detail = _(
        "This account was suspended by an account above yours in the network, or by our "
        "staff: only they can resume it."
    )


# Refusals of an API key (docs/contract.md §2). ---------------------------------------------


class CredentialRefused(ApplicationError, drf_exceptions.APIException):  # type: ignore[misc]
    """Raised by an authentication class.

    Also a DRF ``APIException`` only so that DRF marks the request unauthenticated before the
    error is rendered; the exception handler treats it as the ApplicationError it is.
    ``api_key``: the key whose secret the caller proved (revoked, or used from an address
    outside its whitelist), so the refusal can be shown in that key's request log.
    """

    api_key: Any = None


class AmbiguousCredentials(CredentialRefused):
    code = "ambiguous_credentials"
    status = 400
    title = _("Ambiguous credentials")
    default_detail = _("Send either an x-api-key header or an Authorization header, not both.")


class InvalidApiKey(CredentialRefused):
    code = "invalid_api_key"
    status = 401
    title = _("Not authenticated")
    default_detail = _("The API key is not valid.")


class ApiKeyRevoked(CredentialRefused):
    code = "api_key_revoked"
    status = 401
    title = _("Not authenticated")
    default_detail = _("This API key was revoked. Create a new key on your profile page.")


class IpNotAllowed(CredentialRefused):
    code = "ip_not_allowed"
    status = 403
    title = _("Forbidden")
    default_detail = _("This API key does not accept requests from your address.")


class AccountSuspended(CredentialRefused):
    """The account, or one of its ancestors in a reseller network, is suspended (section 18):
    its keys and sessions, and those of its agents, are refused until it is resumed."""

    code = "account_suspended"
    status = 403
    title = _("Forbidden")
    default_detail = _("This account is suspended. Contact whoever manages it.")


class WebSessionRequiredError(PermissionDenied):
    code = "web_session_required"
    default_detail = _("This endpoint is for the web application only; API keys are refused.")


class ApiKeyRequiredError(PermissionDenied):
    code = "api_key_required"
    default_detail = _("This endpoint needs an API key in the x-api-key header.")


class B2BNotEnabled(PermissionDenied):
    code = "b2b_not_enabled"
    default_detail = _("The B2B API is not enabled for this account. Contact us to enable it.")


class TestKeyRequiredError(PermissionDenied):
    code = "test_key_required"
    default_detail = _("This endpoint needs a test API key (rsl_test_…).")


class ApiKeyNotEditable(ApplicationError):
    code = "validation_error"
    status = 400
    title = _("Validation error")
    default_detail = _("This key is revoked and can no longer change.")

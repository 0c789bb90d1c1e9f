"""The site's account pages: sign-up, login, logout, profile, billing and API keys (the list of
keys and a key's page show its sandbox too: site_pages.views)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils import translation
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext as _
from django.views import i18n as i18n_views
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import addresses, selectors, services
from accounts import team as team_services
from accounts.errors import EmailTaken
from accounts.forms import (
    AccountNameForm,
    ApiKeyCreateForm,
    BillingForm,
    EmailChangeForm,
    EmailLoginForm,
    InvitationAcceptForm,
    InviteForm,
    ProfileForm,
    SignupForm,
)
from accounts.http import AuthenticatedRequest
from accounts.models import BillingProfile, User
from reseller.errors import ApplicationError
from reseller.net import client_ip, local_url


def _remember_language(response: HttpResponse, language: str) -> HttpResponse:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME, language, max_age=365 * 24 * 3600, samesite="Lax"
    )
    return response


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Sign-up sends a confirmation link (docs/contract.md §12); the answer is the same whether
    or not the address already has an account."""
    if request.user.is_authenticated:
        return redirect("accounts:profile")
    form = SignupForm(request.POST or None)
    after = local_url(request, request.POST.get("next") or request.GET.get("next", ""))
    if request.method == "POST" and form.is_valid():
        if after:  # the page to land on once the link (opened in this browser) logs in
            request.session[SIGNUP_NEXT] = after
        email = form.cleaned_data["email"]
        if addresses.emails_allowed(scope="signup", address=client_ip(request), email=email):
            addresses.signup_request(
                email=email,
                password=form.cleaned_data["password1"],
                first_name=form.cleaned_data["first_name"],
                last_name=form.cleaned_data["last_name"],
                account_name=form.cleaned_data["account_name"],
                language=translation.get_language() or "en",
                site_url=request.build_absolute_uri("/"),
            )
        request.session["signup_email"] = email
        return redirect("accounts:signup-sent")
    return render(request, "accounts/signup.html", {"form": form, "next": after})


SIGNUP_NEXT = "signup_next"


@require_GET
def signup_sent(request: HttpRequest) -> HttpResponse:
    return render(
        request, "accounts/signup_sent.html", {"email": request.session.get("signup_email")}
    )


@require_http_methods(["GET", "POST"])
def signup_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The link of the confirmation email: a button (POST) creates the account and logs in, so
    a mail scanner that follows links cannot use it up."""
    if request.method == "POST":
        try:
            user = addresses.signup_confirm(token=token)
        except EmailTaken:
            messages.info(request, _("This address already has an account: log in."))
            return redirect("accounts:login")
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, _("Your email is confirmed. Welcome! Your account is ready."))
            # Where the visitor was going when they signed up (a "Buy now" checkout), checked
            # again; the session survives the login.
            after = local_url(request, request.session.pop(SIGNUP_NEXT, ""))
            return _remember_language(redirect(after or "accounts:profile"), user.language)
    pending = addresses.signup_pending(token=token)
    return render(request, "accounts/signup_confirm.html", {"pending": pending})


class LoginView(auth_views.LoginView):
    form_class = EmailLoginForm
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form):
        """The language the visitor was using when logging in wins and becomes the profile's
        (the one picked on the site, else the browser's); with neither, the profile's is
        the site's. A Spanish visitor stays Spanish, and the email we send follows."""
        response = super().form_valid(form)
        user = form.get_user()
        _save_language(user, _language_in_use(self.request))
        return _remember_language(response, user.language)


def _language_in_use(request: HttpRequest) -> str:
    """The language the visitor reads the site in: picked (the cookie), else asked for by the
    browser (Accept-Language), else "" (nothing said: the profile's stays)."""
    picked = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME, "")
    if picked or not request.META.get("HTTP_ACCEPT_LANGUAGE"):
        return picked
    return translation.get_language_from_request(request)


def _save_language(user, language: str) -> None:
    """Make ``language`` the profile's, when it is one of the site's and not already it."""
    if language in dict(settings.LANGUAGES) and language != user.language:
        services.user_update_profile(user=user, user_data={"language": language})


@require_POST
def set_language(request: HttpRequest) -> HttpResponse:
    """The site's language switcher (Django's ``set_language``); a logged-in user's choice is
    also saved to the profile, so the next login keeps it."""
    response = i18n_views.set_language(request)
    if request.user.is_authenticated:
        _save_language(request.user, request.POST.get("language", ""))
    return response


class LogoutView(auth_views.LogoutView):
    pass


class PasswordResetView(auth_views.PasswordResetView):
    """``/accounts/password-reset/``: the same answer, and the same path, whether or not the
    email has an account (docs/contract.md §12): one message is queued either way
    (``addresses.password_reset_request``); the link works once, for an hour."""

    template_name = "accounts/password_reset.html"
    success_url = reverse_lazy("accounts:password-reset-sent")

    def form_valid(self, form):
        address, email = client_ip(self.request), form.cleaned_data["email"]
        if services.password_reset_allowed(address=address, email=email):
            addresses.password_reset_request(
                email=email,
                language=translation.get_language() or "en",
                site_url=self.request.build_absolute_uri("/"),
            )
        return redirect(self.success_url)  # the same answer: nothing tells what happened


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("accounts:password-reset-done")


@login_required
@require_http_methods(["GET", "POST"])
def email_change(request: AuthenticatedRequest) -> HttpResponse:
    form = EmailChangeForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"]
        if addresses.emails_allowed(scope="email-change", address=client_ip(request), email=email):
            addresses.email_change_request(
                user=request.user, new_email=email, site_url=request.build_absolute_uri("/")
            )
        messages.info(
            request,
            _("We sent a link to %(email)s. Your email changes when you open it.")
            % {"email": email},
        )
        return redirect("accounts:profile")
    return render(request, "accounts/email_change.html", {"form": form})


@require_http_methods(["GET", "POST"])
def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """The link sent to a new address: a button (POST) moves the account to it."""
    if request.method == "POST":
        try:
            user = addresses.email_change_confirm(
                token=token, site_url=request.build_absolute_uri("/")
            )
        except EmailTaken:
            user = None
            messages.error(request, _("Another account uses this address now."))
        if user is not None:
            messages.success(request, _("Your email is now %(email)s.") % {"email": user.email})
            return redirect(
                "accounts:profile" if request.user.is_authenticated else "accounts:login"
            )
    pending = addresses.email_change_pending(token=token)
    return render(request, "accounts/email_confirm.html", {"pending": pending})


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: AuthenticatedRequest) -> HttpResponse:
    user = request.user
    billing, _created = BillingProfile.objects.get_or_create(account=user.account)
    post = request.POST if request.method == "POST" else None
    profile_form = ProfileForm(post, instance=user, prefix="profile")
    account_form = AccountNameForm(
        post, initial={"account_name": user.account.name}, prefix="account"
    )
    billing_form = BillingForm(post, instance=billing, prefix="billing")
    if post is not None and all(f.is_valid() for f in (profile_form, account_form, billing_form)):
        services.user_update_profile(
            user=user,
            user_data=profile_form.cleaned_data,
            account_data={"name": account_form.cleaned_data["account_name"]},
            billing_data=billing_form.cleaned_data,
        )
        messages.success(request, _("Your profile is saved."))
        response = redirect("accounts:profile")
        return _remember_language(response, user.language)
    return render(
        request,
        "accounts/profile.html",
        {"profile_form": profile_form, "account_form": account_form, "billing_form": billing_form},
    )


# API keys (docs/contract.md §3): created and revoked here, restricted on the key's page
# (site_pages.views), never over the API. Keys of other accounts do not exist for these pages
# (404).

_FORM_TOKEN_SECONDS = 3600


def _form_token_cache_key(request: HttpRequest, token: str) -> str:
    return f"api-key-form:{request.user.pk}:{token}"


def _issue_form_token(request: HttpRequest) -> str:
    token = secrets.token_urlsafe(18)
    cache.set(_form_token_cache_key(request, token), 1, _FORM_TOKEN_SECONDS)
    return token


def _spend_form_token(request: HttpRequest, token: str) -> bool:
    """True once per token: a reload or double submission of the create form gets False."""
    return bool(cache.delete(_form_token_cache_key(request, token)))


@login_required
@require_http_methods(["GET", "POST"])
def api_key_create(request: AuthenticatedRequest) -> HttpResponse:
    if request.method == "GET":
        form = ApiKeyCreateForm(initial={"form_token": _issue_form_token(request)})
        return render(request, "accounts/keys_new.html", {"form": form})
    form = ApiKeyCreateForm(request.POST)
    if not form.is_valid():
        return render(request, "accounts/keys_new.html", {"form": form})
    if not _spend_form_token(request, form.cleaned_data["form_token"]):
        messages.warning(
            request,
            _(
                "This form was already sent. A key's value is shown only once: if you did "
                "not copy it, revoke that key and create a new one."
            ),
        )
        return redirect("accounts:api-keys")
    key, plaintext = services.api_key_create(
        account=request.user.account,
        user=request.user,
        name=form.cleaned_data["name"],
        mode=form.cleaned_data["mode"],
        ip_whitelist=form.cleaned_data["ip_whitelist"],
    )
    # The plaintext is in this response only: not stored, not cached, not behind a redirect.
    response = render(request, "accounts/keys_created.html", {"key": key, "plaintext": plaintext})
    add_never_cache_headers(response)
    return response


@login_required
@require_http_methods(["GET", "POST"])
def api_key_revoke(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    key = selectors.api_key_of_account(account=request.user.account, public_id=key_id)
    if request.method == "POST":
        services.api_key_revoke(key=key, by=request.user)
        messages.success(
            request,
            _("The key %(name)s is revoked: it stops working at once.") % {"name": key.name},
        )
        return redirect("accounts:api-keys")
    return render(request, "accounts/keys_revoke.html", {"key": key})


# -- team (issue 18) ------------------------------------------------------------------------------


@login_required
@require_GET
def team(request: AuthenticatedRequest) -> HttpResponse:
    """The account's members and pending invitations; owners only (accounts.roles)."""
    account = request.user.account
    return render(
        request,
        "accounts/team.html",
        {
            "members": list(team_services.members(account=account)),
            "pending": list(team_services.invitations_pending(account=account)),
            "form": InviteForm(),
            "short_roles": User._meta.get_field("role").choices,
        },
    )


@login_required
@require_POST
def team_invite(request: AuthenticatedRequest) -> HttpResponse:
    form = InviteForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return redirect("accounts:team")
    email = form.cleaned_data["email"]
    if addresses.emails_allowed(scope="invite", address=client_ip(request), email=email):
        team_services.member_invite(
            by=request.user,
            email=email,
            role=form.cleaned_data["role"],
            site_url=request.build_absolute_uri("/"),
        )
    messages.success(request, _("We sent an invitation to %(email)s.") % {"email": email})
    return redirect("accounts:team")


def _member(request: AuthenticatedRequest, user_id: str) -> User:
    member = User.objects.filter(
        public_id=user_id, account=request.user.account, is_active=True
    ).first()
    if member is None:
        raise Http404
    return member


@login_required
@require_POST
def member_role(request: AuthenticatedRequest, user_id: str) -> HttpResponse:
    member = _member(request, user_id)
    try:
        team_services.member_set_role(member=member, role=request.POST.get("role", ""))
    except ApplicationError as exc:
        messages.error(request, _first_message(exc))
    else:
        messages.success(request, _("%(email)s is now %(role)s.") % {
            "email": member.email, "role": member.get_role_display()})  # fmt: skip
    return redirect("accounts:team")


@login_required
@require_POST
def member_remove(request: AuthenticatedRequest, user_id: str) -> HttpResponse:
    member = _member(request, user_id)
    try:
        team_services.member_remove(member=member)
    except ApplicationError as exc:
        messages.error(request, _first_message(exc))
    else:
        messages.success(request, _("%(email)s left the account.") % {"email": member.email})
    return redirect("accounts:team")


def _first_message(exc: ApplicationError) -> str:
    return exc.fields[0]["message"] if exc.fields else exc.detail


@require_http_methods(["GET", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """The invitation link: choose a password and join the account with its role."""
    pending = team_services.invitation_pending(token=token)
    if pending is None or request.user.is_authenticated:
        return render(
            request,
            "accounts/invitation.html",
            {"pending": None, "signed_in": request.user.is_authenticated},
        )
    form = InvitationAcceptForm(request.POST or None, email=pending.email)
    if request.method == "POST" and form.is_valid():
        user = team_services.invitation_accept(
            token=token,
            password=form.cleaned_data["password1"],
            first_name=form.cleaned_data["first_name"],
            last_name=form.cleaned_data["last_name"],
            language=translation.get_language() or "en",
        )
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, _("Welcome to %(account)s.") % {"account": user.account.name})
            return redirect("accounts:profile")
    return render(request, "accounts/invitation.html", {"pending": pending, "form": form})

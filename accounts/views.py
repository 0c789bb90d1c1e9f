"""The site's account pages: sign-up, login, logout, profile and billing."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts import services
from accounts.forms import AccountNameForm, BillingForm, EmailLoginForm, ProfileForm, SignupForm
from accounts.models import BillingProfile


def _remember_language(response: HttpResponse, language: str) -> HttpResponse:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME, language, max_age=365 * 24 * 3600, samesite="Lax"
    )
    return response


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("accounts:profile")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = services.user_create(
            email=form.cleaned_data["email"],
            password=form.cleaned_data["password1"],
            first_name=form.cleaned_data["first_name"],
            last_name=form.cleaned_data["last_name"],
            account_name=form.cleaned_data["account_name"] or None,
            language=translation.get_language() or "en",
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome! Your account is ready."))
        return redirect("accounts:profile")
    return render(request, "accounts/signup.html", {"form": form})


class LoginView(auth_views.LoginView):
    form_class = EmailLoginForm
    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def form_valid(self, form):
        response = super().form_valid(form)
        return _remember_language(response, form.get_user().language)


class LogoutView(auth_views.LogoutView):
    pass


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
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

"""Login, token refresh and the caller's own profile (docs/contract.md §3)."""

from __future__ import annotations

from django.contrib.auth.models import update_last_login
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.authentication import request_api_key
from accounts.permissions import LiveProfileWrite
from accounts.serializers import ApiKeyOut, LoginIn, LoginOut, MeIn, MeOut, RefreshIn, RefreshOut
from reseller import openapi_examples as ex
from reseller.api import problems
from reseller.net import client_ip


def _me(request) -> dict:
    """The body of GET and PATCH /auth/me: the user read afresh, and the key when one was used."""
    payload = dict(MeOut(selectors.user_with_account(request.user.pk)).data)
    key = request_api_key(request)
    if key is not None:
        payload["api_key"] = ApiKeyOut(key).data
    return payload


class LoginApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=["auth"],
        summary="Log in with email and password",
        description="Starts a browser session: returns a JWT access token (15 minutes) and a "
        "refresh token (7 days, rotated on use). Attempts are limited per address and per email. "
        "Staff accounts also send `otp` (their authenticator's code or a recovery code); "
        "without it they get 401 `otp_required`.",
        request=LoginIn,
        examples=ex.exchange("Log in", ex.LOGIN_REQUEST, ex.LOGIN),
        responses={200: LoginOut, **problems(400, 401, 429)},
    )
    def post(self, request):
        data = LoginIn(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_login(
            address=client_ip(request),
            email=data.validated_data["email"],
            password=data.validated_data["password"],
            otp=data.validated_data["otp"],
        )
        refresh = services.tokens_for(user)
        update_last_login(None, user)
        return Response(
            LoginOut(
                {"access": str(refresh.access_token), "refresh": str(refresh), "user": user}
            ).data
        )


class RefreshApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=["auth"],
        summary="Exchange a refresh token for a new pair",
        description="The refresh token is rotated: the one sent is blacklisted and cannot be "
        "used again.",
        request=RefreshIn,
        examples=ex.exchange("Refresh", {"refresh": ex.REFRESH_TOKEN}, ex.TOKENS),
        responses={200: RefreshOut, **problems(400, 401)},
    )
    def post(self, request):
        data = RefreshIn(data=request.data)
        data.is_valid(raise_exception=True)
        pair = services.token_refresh(refresh=data.validated_data["refresh"])
        return Response(RefreshOut(pair).data)


class MeApi(APIView):
    permission_classes = [LiveProfileWrite]

    @extend_schema(
        tags=["auth"],
        summary="The authenticated user, account and billing data",
        description="Also validates a credential: any valid API key or web session answers 200. "
        "Called with an API key, the answer also carries the key's public data (`apiKey`).",
        examples=[ex.response("With an API key", ex.me())],
        responses={200: MeOut, **problems(400, 401, 403, 429)},
    )
    def get(self, request):
        return Response(_me(request))

    @extend_schema(
        tags=["auth"],
        summary="Update profile and billing data",
        description="Send only what changes, grouped as in the GET response. Fields that "
        "cannot be set (email, isStaff, isB2b, discountPercent, …) are refused with 400.",
        request=MeIn,
        examples=ex.exchange("Update the profile", ex.ME_PATCH_REQUEST, ex.me()),
        responses={200: MeOut, **problems(400, 401, 403, 429)},
    )
    def patch(self, request):
        data = MeIn(data=request.data)
        data.is_valid(raise_exception=True)
        services.user_update_profile(
            user=request.user,
            user_data=data.validated_data.get("user"),
            account_data=data.validated_data.get("account"),
            billing_data=data.validated_data.get("billing"),
        )
        return Response(_me(request))

import factory

from accounts import services
from accounts.models import Account, BillingProfile, User

PASSWORD = "correct-horse-battery-9"


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Account {n}")

    billing = factory.RelatedFactory("tests.factories.BillingFactory", "account")


class BillingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BillingProfile
        django_get_or_create = ("account",)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    first_name = "Test"
    last_name = "User"
    account = factory.SubFactory(AccountFactory)

    @factory.post_generation
    def password(obj, create, extracted, **kwargs):
        obj.set_password(extracted or PASSWORD)
        if create:
            obj.save(update_fields=["password"])


def make_key(user=None, *, mode="test", name="Shop", ip_whitelist=(), **limits):
    """A key of ``user``'s account made by the real service; returns (key, plaintext)."""
    user = user or UserFactory()
    key, plaintext = services.api_key_create(
        account=user.account, user=user, name=name, mode=mode, ip_whitelist=ip_whitelist
    )
    if limits:
        services.api_key_set_limits(
            key=key,
            rate_limit_per_minute=limits.get("rate_limit_per_minute"),
            max_units_per_request=limits.get("max_units_per_request"),
        )
    return key, plaintext

import factory

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

from django.core.management.base import BaseCommand

from catalog.demo import seed_demo


class Command(BaseCommand):
    help = (
        "Load the demo catalog (real countries and operators, 100+ products, promotions, FX "
        "rates), a staff user and a B2B reseller. Safe to run again: nothing changes."
    )

    def handle(self, *args, **options):
        report = seed_demo()
        for kind, counts in report.counts.items():
            total = sum(counts.values())
            self.stdout.write(
                f"{kind}: {total} ({counts['created']} created, {counts['updated']} updated, "
                f"{counts['unchanged']} unchanged)"
            )
        self.stdout.write("")
        self.stdout.write("Demo users (log in at /accounts/login/ or POST /api/v1/auth/login):")
        for role, email, password, created in report.users:
            state = "created" if created else "already there, password left as it was"
            self.stdout.write(f"  {role}: {email} / {password}  ({state})")
        if not report.changed:
            self.stdout.write(self.style.SUCCESS("Nothing to change: the demo data is in place."))

from io import StringIO

import segno
from django.core.management.base import BaseCommand

from catalog.demo import seed_demo


class Command(BaseCommand):
    help = (
        "Load the demo catalog (real countries and operators, 100+ products, promotions, FX "
        "rates), a staff user with an enrolled authenticator and a B2B reseller. Safe to run "
        "again: nothing changes."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--qr",
            action="store_true",
            help="Also draw the staff user's authenticator as a QR code (make run does).",
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
        self.stdout.write(
            "Demo users (the site: /accounts/login/ or POST /api/v1/auth/login; "
            "the back office: /admin/):"
        )
        for role, email, password, created in report.users:
            state = "created" if created else "already there, password left as it was"
            self.stdout.write(f"  {role}: {email} / {password}  ({state})")
        if report.staff_otpauth:
            self.stdout.write(
                "  The back office also asks the staff user for a code from an authenticator app "
                "(2FA). Add this to the app (scan the QR code or paste the secret):"
            )
            self.stdout.write(f"  {report.staff_otpauth}")
            if options["qr"]:
                drawing = StringIO()
                segno.make(report.staff_otpauth, error="L").terminal(out=drawing, compact=True)
                self.stdout.write(drawing.getvalue(), ending="")
        if not report.changed:
            self.stdout.write(self.style.SUCCESS("Nothing to change: the demo data is in place."))

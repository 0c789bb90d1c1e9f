from celery import shared_task

from metrics.checks import ledger_checks_run


@shared_task(ignore_result=True)
def ledger_check_task() -> None:
    """Beat, every hour: the ledger and books checks, kept for ``reseller_ledger_check_ok``."""
    ledger_checks_run()

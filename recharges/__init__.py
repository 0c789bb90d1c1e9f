"""Recharge processing: state machine, processor, tasks, sandbox outcomes and providers."""

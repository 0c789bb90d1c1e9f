"""The sandbox of test keys in one place: balances and top-ups (balances), simulated
outcomes and their settling (outcomes). docs/sandbox.md."""

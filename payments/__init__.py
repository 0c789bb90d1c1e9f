"""Payments: an order's payment rows, the Stripe gateway, and what a refund moves."""

"""Card payments: the Stripe gateway, prepare/checkout services and APIs, the Stripe webhook."""

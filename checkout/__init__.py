"""Card checkout: card payments of orders and card top-ups of the wallet, the Stripe webhook."""

"""The transaction coordinator (KIP-98, KIP-890) and __transaction_state."""

"""What the agent's model calls cost: the price table, the ledger of every call and the
reports over it (`usage.get`, `gsv usage`)."""

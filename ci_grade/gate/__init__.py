"""The gate: baseline store, pairing, statistics and the decision."""

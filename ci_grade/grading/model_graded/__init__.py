"""Model-graded assertions: one module per type (or family), registered when imported."""

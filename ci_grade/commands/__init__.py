"""CLI commands: each module registers its subcommand and imports heavy modules only when run."""

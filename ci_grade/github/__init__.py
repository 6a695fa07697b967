"""GitHub Actions mode: inputs, event, workflow commands, output files, annotations, the PR comment."""

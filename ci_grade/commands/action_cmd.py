"""`ci-grade action`: the GitHub Action's entrypoint.

Reads the inputs from `INPUT_*` variables, runs the eval, compares it with the baseline, writes
the results JSON and JUnit, posts one sticky PR comment (pull-request events), writes the job
summary (always), outputs and annotations, and exits per the gate. GitHub problems (a read-only
token on fork PRs, API errors) are warnings: they never change the gate's verdict.

With `shard`, it runs one shard and writes its results, nothing else: failing tests do not fail
the step (the merge decides). With `merge`, it runs no eval: it merges the shards' results (one
section per config) and publishes and gates them as above.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ci_grade.github.event import ActionEvent
    from ci_grade.github.inputs import ActionInputs
    from ci_grade.github.workflow_commands import WorkflowCommands
    from ci_grade.run.stop import Stop


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("action", help="run as the GitHub Action (inputs from INPUT_* variables)", description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks for internal errors")
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    """The action's exit code: the gate's, or 130/143 after SIGINT/SIGTERM once every report,
    the comment and the outputs are written."""
    from ci_grade import redact
    from ci_grade.errors import Interrupted
    from ci_grade.github.event import ActionEvent
    from ci_grade.github.inputs import read_inputs
    from ci_grade.github.publishing import report_failure
    from ci_grade.github.workflow_commands import WorkflowCommands
    from ci_grade.run.stop import Stop

    commands = WorkflowCommands()
    env = dict(os.environ)
    mask_secrets(commands, env)
    event = ActionEvent.from_env(env)
    inputs = None
    stop = Stop()
    try:
        with stop.catching_signals():
            inputs = read_inputs(env)
            stop.max_duration = inputs.max_duration
            redact.current().add(inputs.secrets())
            code = run_action(commands, env, event, inputs, stop)
    except Exception as exc:  # an internal error too: the summary and the comment must not go stale
        report_failure(commands, env, event, inputs, exc)
        raise
    if stop.signum is not None:
        raise Interrupted(stop.signum)
    return code


def mask_secrets(commands: WorkflowCommands, env: Mapping[str, str]) -> None:
    """`::add-mask::` every secret the run knows or learns (secret-looking variables and secret
    inputs now; the config's `env:` values, `--env-file` values and provider credentials as
    they are learned), each before anything could print it."""
    from ci_grade import redact
    from ci_grade.github.inputs import SECRET_INPUTS, raw_input

    redactor = redact.current()
    redactor.learn_env(env)
    redactor.add(raw_input(env, name) for name in SECRET_INPUTS)
    redactor.listen(commands.add_mask)


def run_action(commands: WorkflowCommands, env: Mapping[str, str], event: ActionEvent, inputs: ActionInputs, stop: Stop) -> int:
    """Evaluate (or merge), compare, publish everywhere, and return the gate's exit code."""
    from ci_grade.commands import action_runs
    from ci_grade.errors import ExitCode, UsageError
    from ci_grade.github.comment import marker_for
    from ci_grade.github.forks import UNSAFE_TITLE, unsafe_trigger
    from ci_grade.github.live import announcer
    from ci_grade.github.publishing import publish_comment, publish_results
    from ci_grade.report.links import Links

    workdir = (event.workspace / inputs.working_directory).resolve()
    if not workdir.is_dir():
        raise UsageError(f"input `working-directory`: {inputs.working_directory} is not a folder in the workspace")
    if event.problem:
        commands.warning(event.problem, title="ci-grade")
    if warning := unsafe_trigger(event, inputs.github_token):
        commands.warning(warning, title=UNSAFE_TITLE)
    if inputs.dry_run:
        return action_runs.dry_run(commands, env, inputs, workdir, stop)
    if inputs.shard:
        return action_runs.run_shard(commands, env, inputs, workdir, event.workspace, stop)
    marker, links = marker_for(inputs.comment_title), Links.from_env(env, head_sha=event.head_sha, cwd=workdir)
    if inputs.merge:
        graded = action_runs.merge_and_compare(commands, inputs, inputs.gate_policy(), workdir, event.workspace)
    else:  # the sticky comment says the run is on as soon as its rows are planned
        live = announcer(commands, inputs.comment_title, links, lambda body: publish_comment(commands, event, inputs, body, marker)) if event.pull_request_number or event.run_head else None
        graded = action_runs.evaluate_and_compare(commands, inputs, inputs.gate_policy(), workdir, event, stop, live)
    publish_results(commands, env, event, inputs, graded, workdir, links)
    return ExitCode.GATE_FAILED if graded.gate_failed else ExitCode.OK

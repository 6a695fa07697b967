"""`trajectory:goal-success`: a grader judges whether the agent reached a goal, from its final
output and a summary of its trajectory (`tracing.steps.judge_summary`).

The value is the goal: text, or `{goal: ...}`. Verdicts follow `llm-rubric` (the grader's `pass`
decides; with a threshold the score must reach it too). A `rubricPrompt` may replace the prompt;
it gets `goal`, `trajectory` and `output` (promptfoo's names). Without tracing it is an ERROR.
"""

from __future__ import annotations

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Measure
from ci_grade.grading.grader_prompts import fence, try_parse
from ci_grade.grading.model_graded.rubric import judge, parse_rubric_verdict
from ci_grade.grading.registry import assertion
from ci_grade.grading.session import GraderSession, excerpt
from ci_grade.tracing.steps import judge_summary


def goal_of(ctx: AssertionContext) -> str:
    value = ctx.value
    goal = value.get("goal") if isinstance(value, dict) else value
    if not isinstance(goal, str) or not goal.strip():
        raise GraderError(f"{ctx.base_type} assertion must have a string value or an object with a goal property")
    return goal.strip()


@assertion("trajectory:goal-success", grader="text", prompt="trajectory-goal-success", uses_trace=True)
async def goal_success(ctx: AssertionContext, grader: GraderSession) -> Measure:
    trace = ctx.require_trace()
    goal = goal_of(ctx)
    trajectory = judge_summary(trace)
    variables = {**ctx.vars, "goal": goal, "trajectory": trajectory, "output": try_parse(ctx.output_text)}
    builtin = {"trajectory_block": fence(trajectory, "trajectory"), "output_block": fence(ctx.output_text)}
    prompt, schema = grader.prompt("trajectory-goal-success", variables, builtin)
    reply = await grader.ask(prompt, schema=schema)
    with grader.reading(reply):
        passed, score, reason = judge(parse_rubric_verdict(reply), ctx.threshold)
    if ctx.inverse:
        reason = f"Agent unexpectedly achieved the goal: {goal}" if passed else f"Agent did not achieve the forbidden goal: {goal}"
    return Measure(score, reason, verdict=passed, metadata={"graderReply": excerpt(reply, 500)})

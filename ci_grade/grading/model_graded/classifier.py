"""`classifier`: a classification grader (e.g. `huggingface:text-classification:<model>`) scores the output.

With a `value` (a label) the score is that label's score, 0 when the classifier did not return it
(the reason lists the labels it did return); without one it is the highest score of any label
(0 when a token classifier found no entity).
Pass when the score reaches the threshold (default 1). There is no default classifier: the
assertion's `provider` or the test's `options.provider` must name one.
"""

from __future__ import annotations

from ci_grade.errors import GraderError
from ci_grade.grading.context import AssertionContext, Grade
from ci_grade.grading.registry import assertion
from ci_grade.grading.scoring import inverted, reaches, shown
from ci_grade.grading.session import GraderSession


@assertion("classifier", grader="classification", handles_inverse=True, default_threshold=1.0, csv_threshold=0.75)
async def classifier(ctx: AssertionContext) -> Grade:
    label = ctx.value
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise GraderError(f"classifier value must be a label name (a string), got {label!r}")
    threshold = ctx.effective_threshold
    assert threshold is not None
    tally = GraderSession(ctx)
    provider = tally.provider("classification")
    response = await provider.classify(ctx.output_text)
    tally.add(None, None, provider.describe())
    if response.error:
        raise tally.error(f"classification call to {provider.describe()} failed: {response.error}")
    scores = response.classification
    if scores is None:
        raise tally.error(f"classification call to {provider.describe()} returned no label scores")
    metadata = {"classification": scores}
    if label is None and not scores:  # a token classifier that found no entity (no PII)
        passed, score, reason = False, 0.0, f"The classifier found no labels: score 0.00 < {shown(threshold)}"
    elif label is None:
        best = max(scores, key=lambda name: scores[name])
        score = scores[best]
        passed = reaches(score, threshold)
        reason = f"Maximum classification score {score:.2f} ({best}) {'>=' if passed else '<'} {shown(threshold)}"
    else:
        score = scores.get(label, 0.0)
        passed = reaches(score, threshold)
        reason = f"Classification {label} has score {score:.2f} {'>=' if passed else '<'} {shown(threshold)}"
        if label not in scores:
            reason += f" (the classifier returned no score for {label!r}; labels: {', '.join(sorted(scores))})"
    passed, score = inverted(passed, score, ctx.inverse)
    return tally.grade(passed, score, reason, metadata=metadata)

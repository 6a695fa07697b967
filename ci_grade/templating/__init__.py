"""promptfoo's nunjucks templates rendered with jinja2: prompts, variables, assertion values and grader prompts.

`nunjucks` is the entry point (`render`, `render_prompt`, `check`, `references`); `jinja_overrides`
holds every override of jinja2 it needs, `javascript` JavaScript's operators, truth and conversions,
`builtin_filters` nunjucks' filters and tests, `methods` JavaScript's string and array methods, and
`scopes` nunjucks' scoping of `{% set %}` in loops. It imports no pipeline stage: config, the run
and grading all render through it.
"""

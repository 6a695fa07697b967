"""Nunjucks-compatible rendering (jinja2 configured like promptfoo's nunjucks) and YAML 1.2 scalars."""

from __future__ import annotations

import json

import pytest

from ci_grade.config import yaml12
from ci_grade.errors import TemplateError
from ci_grade.templating import nunjucks
from ci_grade.templating.nunjucks import render, render_prompt, resolve_references


def test_undefined_variables_render_empty_even_when_chained() -> None:
    assert render("[{{ missing }}][{{ a.b.c }}][{{ a['x'].y }}][{{ missing | upper }}]", {}) == "[][][][]"
    assert render("{% if missing %}yes{% else %}no{% endif %}", {}) == "no"
    assert render("{{ obj.present }}-{{ obj.absent.deeper }}", {"obj": {"present": 1}}) == "1-"


def test_a_mapping_member_is_its_key_never_a_dict_method() -> None:
    """nunjucks looks `order.items` up as the key `items` (a JavaScript object has no `items`
    method); jinja would find Python's `dict.items` first. Without such a key, `.items()` still
    iterates a mapping (the way to loop over keys and values, see docs/compatibility.md)."""
    order = {"items": ["tea", "cake"], "values": 3, "keys": "k", "get": "g"}
    assert render("{{ order.items | join(', ') }}|{{ order.values }}|{{ order.keys }}|{{ order.get }}", {"order": order}) == "tea, cake|3|k|g"
    assert render("{% for item in order.items %}{{ item }};{% endfor %}", {"order": order}) == "tea;cake;"
    assert render("{% for k, v in plain.items() %}{{ k }}={{ v }};{% endfor %}[{{ plain.absent }}][{{ plain.length }}]", {"plain": {"a": 1}}) == "a=1;[][]"
    assert render("{{ text.length }} {{ listed.length }} {{ obj.length }}", {"text": "abc", "listed": [1, 2], "obj": {"length": 7}}) == "3 2 7"


def test_nothing_is_html_escaped() -> None:
    assert render("{{ html }} & {{ '<i>' }}", {"html": "<b>&amp;\"'</b>"}) == "<b>&amp;\"'</b> & <i>"


def test_env_global_reads_overrides_then_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_GRADE_TEMPLATE_PROBE", "process")
    assert render("{{ env.CI_GRADE_TEMPLATE_PROBE }}", {}) == "process"
    assert render("{{ env.CI_GRADE_TEMPLATE_PROBE }}", {}, {"CI_GRADE_TEMPLATE_PROBE": "config"}) == "config"
    monkeypatch.setenv("CI_GRADE_TEMPLATE_PROBE", "changed")
    assert render("{{ env.CI_GRADE_TEMPLATE_PROBE }}|{{ env.NOPE_NOT_SET }}", {}) == "changed|"
    assert render("{{ env }}", {"env": "a test var named env wins"}) == "a test var named env wins"


def test_dump_and_load_filters() -> None:
    data = {"name": "Zoë", "tags": ["a", "b"], "ok": True, "n": None}
    assert render("{{ data | dump }}", {"data": data}) == '{"name":"Zoë","tags":["a","b"],"ok":true,"n":null}'
    assert json.loads(render("{{ data | dump(2) }}", {"data": data})) == data
    assert render("{{ missing | dump }}", {}) == ""
    assert render("{{ (raw | load).tone }} {{ (raw | load).n + 1 }}", {"raw": '{"tone": "formal", "n": 2}'}) == "formal 3"
    with pytest.raises(TemplateError, match="JSONDecodeError"):
        render("{{ bad | load }}", {"bad": "{not json"})


def test_loops_and_conditionals() -> None:
    template = "{% for item in items %}{{ loop.index }}. {{ item.name }}{% if loop.last %}.{% else %}, {% endif %}{% endfor %}"
    assert render(template, {"items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}) == "1. a, 2. b, 3. c."
    assert render("{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}", {"d": {"b": 2, "a": 1}}) == "a=1;b=2;"
    assert render("{% set greeting = 'hi' %}{{ greeting | capitalize }} {{ name | default('you') }}", {}) == "Hi you"
    assert render("{{ items | join(', ') }} ({{ items.length }}, {{ word.length }})", {"items": ["x", "y"], "word": "four"}) == "x, y (2, 4)"
    assert render("{{ style.length }}|{{ other.length }}", {"style": {"length": "brief"}, "other": {"a": 1}}) == "brief|"


def test_values_print_the_way_javascript_prints_them() -> None:
    variables = {"t": True, "f": False, "i": 3, "whole": 2.0, "frac": 0.25, "tiny": 1e-7, "lst": [1, "a", None, True], "obj": {"a": 1}, "none": None}
    assert render("{{t}} {{f}} {{i}} {{whole}} {{frac}} {{tiny}} [{{lst}}] {{obj}} [{{none}}]", variables) == "true false 3 2 0.25 1e-7 [1,a,,true] [object Object] []"
    assert render("{{ 1 == 1 }} {{ 7 / 2 }} {{ 4 / 2 }}", {}) == "true 3.5 2"


def test_json_chat_prompts_escape_interpolated_values() -> None:
    template = '[{"role": "system", "content": "Topic: {{ topic }}"}, {"role": "user", "content": "{{ question }}"}]'
    question = 'He said "hi"\nand \\ left'
    rendered = render_prompt(template, {"topic": "<tags> & 'quotes'", "question": question})
    assert json.loads(rendered) == [{"role": "system", "content": "Topic: <tags> & 'quotes'"}, {"role": "user", "content": question}]
    # a prompt that is not JSON renders as text; one that only starts like JSON too
    assert render_prompt("[note] {{ x }}", {"x": '"q"'}) == '[note] "q"'
    assert render_prompt('{"a": "{{ x }}"} trailing', {"x": "1"}) == '{"a": "1"} trailing'


def test_syntax_errors_are_reported_with_the_template_line() -> None:
    with pytest.raises(TemplateError) as caught:
        nunjucks.check("line one\n{% if x %}never closed")
    assert str(caught.value).startswith("template syntax error on line 2:")
    nunjucks.check('[{"role": "user", "content": "{{ \\"quoted\\" }} {{ x }}"}]')  # strings checked one by one
    with pytest.raises(TemplateError, match="line 1"):
        render("{{ unclosed", {})


def test_var_references_resolve_like_promptfoo() -> None:
    resolved = resolve_references({"a": "{{b}}!", "b": "{{ c }}?", "c": "deep", "n": 4, "d": "{{n}} {{obj}} {{a}}", "obj": {"k": 1}})
    assert resolved == {"a": "deep?!", "b": "deep?", "c": "deep", "n": 4, "d": "4 {{obj}} deep?!", "obj": {"k": 1}}
    looped = resolve_references({"x": "{{y}}", "y": "{{x}}"})
    assert set(looped) == {"x", "y"}  # terminates


def test_yaml_12_core_scalars() -> None:
    data = yaml12.loads(
        """
        yes_word: Yes
        on_word: on
        off_word: OFF
        no_word: no
        y: y
        octal_looking: 010
        real_octal: 0o17
        hex: 0x1F
        float: 1.50
        exp: 1e3
        truth: true
        capital: True
        nothing: ~
        date: 2026-11-21
        version: 1.10
        """.replace("\n        ", "\n")
    )
    assert data == {
        "yes_word": "Yes",
        "on_word": "on",
        "off_word": "OFF",
        "no_word": "no",
        "y": "y",
        "octal_looking": 10,
        "real_octal": 15,
        "hex": 31,
        "float": 1.5,
        "exp": 1000.0,
        "truth": True,
        "capital": True,
        "nothing": None,
        "date": "2026-11-21",
        "version": 1.1,
    }


def test_yaml_keys_written_twice_are_errors() -> None:
    import yaml

    with pytest.raises(yaml.MarkedYAMLError) as caught:
        yaml12.loads("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 3
    assert yaml12.loads("base: &b {x: 1}\nchild:\n  <<: *b\n  x: 2\n") == {"base": {"x": 1}, "child": {"x": 2}}


@pytest.mark.parametrize(
    "template",
    ['{"reason": "x", "pass": true}', "a {single} brace\n", "line one\r\nline {two}\r\n", "{{ name }} {", "{% if name %}yes{% endif %}", "{# note #}text {"],
)
def test_text_without_tags_renders_as_jinja_would(template: str) -> None:
    """Text that opens no tag, expression or comment skips the template engine: same result."""
    assert render(template, {"name": "Ada"}) == nunjucks._compile(template, ()).render({"name": "Ada"})


SUBSTITUTION_VARIABLES = {"name": "Ada <b>&", "city": "Zürich\n{{ not rendered }}", "n": 3, "flag": True, "items": ["a", "b"], "blank": "", "self": "me", "true": "yes"}


@pytest.mark.parametrize(
    "template",
    [
        "Hi {{ name }}",
        "{{name}} from {{  city  }}, {{ name }} again\n",
        "{{\nname\n}}}} and {{ blank }}.",
        "{{ n }} / {{ flag }} / {{ items }}",  # not text: printed the JavaScript way, by jinja
        "{{ missing }}-{{ name }}",  # not there: empty, by jinja
        "{{ self }} {{ true }}",  # names jinja reads otherwise
        "{{ name | upper }} {{ name }}",
        "{{ name }}{% if n %}!{% endif %}",
        "{{ name }} {# note #}",
        "{{ name }}\r\n",
        "{{ name }}{{- city }}",
        "{ {{ name }} }",
    ],
)
def test_templates_that_only_print_variables_render_as_jinja_would(template: str) -> None:
    """Printing text variables by name skips the template engine: same result, whatever the template."""
    expected = nunjucks._compile(template, ()).render(SUBSTITUTION_VARIABLES)
    assert render(template, SUBSTITUTION_VARIABLES) == expected


def test_only_plain_substitutions_skip_the_template_engine() -> None:
    assert nunjucks._substitutions("Hi {{ name }}, {{city}}") == ("Hi ", "name", ", ", "city", "")
    for template in ("{{ name | upper }}", "{{ self }}", "{{ a.b }}", "{{ name }}{% if x %}{% endif %}", "{{ name }}\r", "{{- name }}"):
        assert nunjucks._substitutions(template) is None

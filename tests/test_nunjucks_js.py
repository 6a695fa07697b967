"""Templates render as promptfoo's nunjucks renders them, where JavaScript's rules differ from
Python's: operators, comparisons, truth, `~`, number printing, and the filters and tests nunjucks
has. Every expected value below is what nunjucks 3.2.4 (promptfoo 0.123.1's) prints for the same
template and variables."""

from __future__ import annotations

import pytest

from ci_grade.templating import nunjucks

VARS = {
    "n": "5", "people": [{"ok": 1}, {"ok": 0}], "x": None, "items": ["a", "b"], "i": 0, "obj": {"a": 1}, "numstr": "5",
    "bigstr": "10", "emptylist": [], "emptyobj": {}, "emptys": "", "zero": 0, "nullv": None, "nums": [3, 1, 2],
}  # fmt: skip


METHOD_VARS = {"a": "hello", "s": "  x  ", "nums": [3, 1, 2], "text": "a\nb\nc"}
LOOP_VARS = {"nullv": None, "obj": {"b": 2, "a": 1}, "nums": [3, 1], "pairs": [[1, 2], [3, 4]]}
PEOPLE = {"people": [{"name": "Ann", "team": "red", "n": 2, "x": {"y": "a"}}, {"name": "Bob", "team": "blue", "n": 1}, {"name": "Cid", "team": "red", "n": 2, "x": {"y": "b"}}, {"name": "Dee", "team": "amber", "n": "z"}]}
SCOPE_VARS = {"nums": [3, 1, 2]}
SCALARS = {"b": True, "n": 3, "f": 2.5, "s": "abc", "z": 0, "a": "Hello", "l": [1, 2], "o": {"x": 1}}
LISTS = {"l": [3, 1, 2], "w": ["b", "a", "c"], "a": "Hello"}
CENTERED = {"z": 0, "n": 3, "b": True, "f": False, "l": [1, 2], "o": {"x": 1}, "a": "Hi"}
SAFE = {"e": "", "o": {"x": 1}, "b": True}
NEGATED = {"a": 1, "b": 1, "z": 0, "l": [1]}
ARITH = {"n": 3, "s": "10", "x": "p", "y": None}
TESTED = {"n": 3, "o": {"x": 1}, "l": [3, 1], "b": True, "s": "10", "s2": "4", "a": "Hello", "a2": "HI"}


@pytest.mark.parametrize(
    ("variables", "template", "expected"),
    [
        (VARS, '{{ n + 1 }}', '51'),
        (VARS, '{{ n * 2 }}', '10'),
        (VARS, '{{ -7 % 3 }}', '-1'),
        (VARS, '{{ 10/0 }}', 'Infinity'),
        (VARS, '{{ missing + 1 }}', 'NaN'),
        (VARS, '{{ 2.5|round }}', '3'),
        (VARS, '{{ -2.5|round }}', '-2'),
        (VARS, '{{ 1.005|round(2) }}', '1'),
        (VARS, '{{ "12abc"|int }}', '12'),
        (VARS, '{{ "abc"|int }}', ''),
        (VARS, '{{ " 3.5e2x"|float }}', '350'),
        (VARS, '{{ "hi😀"|length }}', '4'),
        (VARS, '{{ [3,1,2]|reverse }}', '2,1,3'),
        (VARS, '{{ [1,2,3,4,5]|batch(2)|length }}', '3'),
        (VARS, '{{ people|selectattr("ok")|length }}', '1'),
        (VARS, '{{ 5|length }}', ''),
        (VARS, '{% if x is null %}N{% elseif x %}T{% else %}F{% endif %}', 'N'),
        (VARS, '{% verbatim %}{{ raw }}{% endverbatim %}', '{{ raw }}'),
        (VARS, '{{ "a\\nb"|nl2br }}', 'a<br />\nb'),
        (VARS, '{{ "hello-world"|title }}', 'Hello-world'),
        (VARS, '{{ "the quick brown fox"|truncate(12) }}', 'the quick...'),
        (VARS, '{{ "the quick brown fox"|truncate(9, true) }}', 'the quick...'),
        (VARS, '{{ "<\\"x\\" & \'y\'>"|escape }}', '&lt;&quot;x&quot; &amp; &#39;y&#39;&gt;'),
        (VARS, '{{ "naïve café"|wordcount }}', '3'),
        (VARS, '{{ [true,false]|join(",") }}', 'true,false'),
        (VARS, '{{ 0.000001 }}', '0.000001'),
        (VARS, '{{ 4/2 }} {{ 5/2 }} {{ 7//2 }} {{ 2**10 }}', '2 2.5 3 1024'),
        (VARS, '{{ "a"+1+2 }} {{ 1+2+"a" }}', 'a12 3a'),
        (VARS, '{{ items[i + 1] }}', 'b'),
        (VARS, '{{ [1,2] + [3] }}', '1,23'),
        (VARS, '{{ obj + "" }}', '[object Object]'),
        (VARS, '{{ "5" - 2 }}', '3'),
        (VARS, '{{ "" * 3 }}', '0'),
        (VARS, '{{ "0x10" * 1 }}', '16'),
        (VARS, '{{ null + 1 }}', '1'),
        (VARS, '{{ true + 1 }}', '2'),
        (VARS, '{{ 0.1 + 0.2 }}', '0.30000000000000004'),
        (VARS, '{{ x is truthy }} {{ [] is truthy }} {{ 0 is falsy }}', 'false true true'),
        (VARS, '{{ "a\\n\\nb"|indent(2) }}', 'a\n  \n  b'),
        (VARS, '{{ [1,2,3,4,5]|slice(2) }}', '1,2,3,4,5'),
        (VARS, '{{ -n }}', '-5'),
        (VARS, '{{ 3 / 0 * 0 }}', 'NaN'),
        (VARS, '{{ (-8) ** 0.5 }}', 'NaN'),
        (VARS, '{{ 10 // 3 }} {{ -10 // 3 }}', '3 -4'),
        (VARS, '{% if numstr == 5 %}a{% else %}b{% endif %}', 'a'),
        (VARS, '{% if numstr != 5 %}ne{% else %}eq{% endif %}', 'eq'),
        (VARS, '{% if numstr > 3 %}gt{% else %}notgt{% endif %}', 'gt'),
        (VARS, '{% if bigstr > 9 %}gt{% else %}no{% endif %}', 'gt'),
        (VARS, '{% if "10" > "9" %}t{% else %}f{% endif %}', 'f'),
        (VARS, '{% if emptylist %}T{% else %}F{% endif %}', 'T'),
        (VARS, '{% if emptyobj %}T{% else %}F{% endif %}', 'T'),
        (VARS, '{{ "yes" if emptylist else "no" }}|{{ emptylist or "fb" }}|{{ emptys or "fb" }}|{{ zero or "fb" }}|{{ 0 and 1 }}|{{ 2 and 3 }}', 'yes||fb|fb|0|3'),
        (VARS, '{{ 3 > 2 > 1 }}|{{ 1 < 2 < 3 }}', 'false|true'),
        (VARS, '{{ not emptylist }}|{{ not 0 }}|{{ not "" }}', 'false|true|true'),
        (VARS, '{{ "x" ~ true }}|{{ "x" ~ nullv }}|{{ "x" ~ missing }}|{{ "x" ~ nums }}|{{ "x" ~ obj }}|{{ "x" ~ 2.0 }}|{{ "x" ~ (10/5) }}', 'xtrue|xnull|xundefined|x3,1,2|x[object Object]|x2|x2'),
        (VARS, '{{ nullv == missing }}|{{ nullv == 0 }}|{{ nums == nums }}|{{ [1] == [1] }}|{{ "1,2" == [1,2] }}|{{ true == 1 }}|{{ "" == 0 }}', 'true|false|true|false|true|true|true'),
        (VARS, '{{ 2 in nums }}|{{ "ell" in "hello" }}|{{ "b" in obj }}|{{ 9 not in nums }}', 'true|true|false|true'),
        (VARS, '{{ missing > 1 }}|{{ missing < 1 }}|{{ nullv < 1 }}|{{ nullv >= 0 }}', 'false|false|true|true'),
        # JavaScript's string and array methods: `replace` replaces the first match, `split()` keeps the text whole
        (METHOD_VARS, '{{ a.toUpperCase() }}|{{ a.toLowerCase() }}|{{ s.trim() }}', 'HELLO|hello|x'),
        (METHOD_VARS, '{{ a.startsWith("he") }}|{{ a.includes("ll") }}|{{ a.indexOf("l") }}|{{ a.slice(1, 3) }}|{{ a.substring(1) }}|{{ a.charAt(0) }}', 'true|true|2|el|ello|h'),
        (METHOD_VARS, '{{ a.replace("l", "L") }}|{{ a.replaceAll("l", "L") }}|{{ a.split("l") }}|{{ a.split() }}|{{ a.split("") }}', 'heLlo|heLLo|he,,o|hello|h,e,l,l,o'),
        (METHOD_VARS, '{{ nums.join("-") }}|{{ nums.indexOf(2) }}|{{ nums.slice(1) }}|{{ nums.includes(2) }}|{{ nums.join() }}', '3-1-2|2|1,2|true|3,1,2'),
        (METHOD_VARS, '{{ a.slice(-3) }}|{{ a.substring(4, 1) }}|{{ a.padStart(8, "*") }}|{{ a.padEnd(7) }}|', 'llo|ell|***hello|hello  |'),
        (METHOD_VARS, '{{ a.endsWith("lo") }}|{{ a.lastIndexOf("l") }}|{{ a.repeat(2) }}|{{ a.at(-1) }}|{{ nums.at(0) }}', 'true|3|hellohello|o|3'),
        (METHOD_VARS, '{{ text.split("\\n") | length }}|{{ a.concat("!", 1) }}', '3|hello!1'),
        # loops: `for k, v in obj` walks an object's pairs; a false value runs the `else` branch
        (LOOP_VARS, '{% for x in nullv %}{{ x }}{% else %}none{% endfor %}', 'none'),
        (LOOP_VARS, '{% for k, v in obj %}{{ k }}={{ v }};{% endfor %}', 'b=2;a=1;'),
        (LOOP_VARS, '{% for k in obj %}{{ k }}{% else %}empty{% endfor %}', 'empty'),
        (LOOP_VARS, '{% for x in nums %}{{ x }}{% endfor %}', '31'),
        (LOOP_VARS, '{% for c in "ab" %}{{ c }}-{% endfor %}', 'a-b-'),
        (LOOP_VARS, '{% for a, b in pairs %}{{ a }}{{ b }}{% endfor %}', '1234'),
        (LOOP_VARS, '{% for x in missing %}{{ x }}{% else %}none{% endfor %}', 'none'),
        # a number or a boolean has nothing to walk, count or group (found by fuzzing templates against nunjucks)
        (SCALARS, '{% for x in b %}<{{ x }}>{% else %}E{% endfor %}|{% for x in n %}<{{ x }}>{% else %}E{% endfor %}|{% for k, v in n %}{{ k }}{% else %}E{% endfor %}', 'E|E|E'),
        (SCALARS, '{{ z | length + l.length }}|{{ n | length }}|{{ b | length }}', 'NaN||'),
        (SCALARS, '{{ b in l }}|{{ n in a }}|{{ 3 in "a3b" }}|{{ l in o }}|{{ missing in a }}|{{ none in "is null" }}|{{ 1 in l }}|{{ "1" in l }}', 'false|false|true|false|false|true|true|false'),
        (SCALARS, "{{ b | string }}|{{ o | string }}|{{ b | safe }}|{{ o | replace('1', 'x') }}|{{ n | replace(3, 'x') }}", 'true|[object Object]|true|[object Object]|x'),
        (SCALARS, '{{ n | first }}|{{ o | first }}|{{ b | last }}|{{ n | sort }}|{{ o | reverse }}|{{ f | batch(2) }}|{{ n | urlencode }}|{{ o | urlencode }}|{{ n | center(5) }}|{{ a | first }}', '|||||||x=1|3|H'),
        (SCALARS, '[{{ f > o | int + 1 }}]|{{ o | int }}|{{ o | int + 1 }}|{{ l | int }}|{{ b | int }}|{{ "x" | float + 1 }}|{{ "x" | int(7) }}', '[false]||NaN|1||NaN|7'),
        (TESTED, '{{ (n | sort) ~ 1 }}|{{ (n | reverse) + 1 }}|{{ (o | reverse) + 1 }}|{{ (n | batch(2)) + 1 }}|{{ (n | select) + 1 }}|{{ (n | reject) + 1 }}|{{ (n | first) + 1 }}|{{ (o | last) + 1 }}|{{ (o | sort) + 1 }}|{{ l | urlencode }}|{{ (b | sort) + 1}}', '1|1|1|1|1|1|NaN|NaN|1|undefined=undefined&undefined=undefined|1'),
        (TESTED, '{% if b is number %}Y{% endif %}|{% if s is lower %}Y{% endif %}|{% if s is upper %}Y{% endif %}|{% if s is odd %}Y{% endif %}|{% if n is odd %}Y{% endif %}|{% if s2 is even %}Y{% endif %}|{% if n is divisibleby(3) %}Y{% endif %}|{% if o is gt(2) %}Y{% endif %}|{% if s2 is gt(2) %}Y{% endif %}|{% if missing is divisibleby(3) %}Y{% endif %}|{% if a is lower %}Y{% endif %}|{% if a2 is upper %}Y{% endif %}', '|Y|Y||Y|Y|Y||Y|||Y'),
        # `not` negates the first term, as nunjucks' compiled JavaScript (`!` without brackets) does
        (NEGATED, "{{ not 1 == 2 }}|{{ not (1 == 2) }}|{{ not a == b }}|{{ not 0 ~ 1 }}|{{ not z + 1 }}|{{ not z * 2 }}|{{ not z in l }}|{{ not a is defined }}", 'false|true|false|true1|2|2|true|false'),
        (NEGATED, "{{ not not z == 1 }}|{{ not -z == 0 }}|{{ not a.b == 1 }}|{{ not l[0] == 1 }}|{{ not 2 ** 2 == 4 }}|{{ not 7 // 2 == 3 }}|{{ not z and a }}|{{ not z or a }}", 'false|false|true|false|false|false|1|true'),
        (NEGATED, "{{ not (z or a) }}|{{ not z % 2 == 0 }}|{{ not (a if z else b) }}|{{ 1 if not z == 0 else 2 }}|{% if not a == b %}Y{% else %}N{% endif %}|{{ not (z) == 0 }}|{{ not z < 1 }}", 'false|false|false|2|N|false|false'),
        # `~` chains with `+` and `-` left to right, as nunjucks' compiled JavaScript does
        (ARITH, '[{{ n | int + 1 ~ s[1] }}]|{{ 3 + 1 ~ 0 }}|{{ n + 1 ~ s }}|{{ 1 ~ 2 + 3 }}|{{ "a" ~ 1 == "a1" }}|{{ 2 * 3 ~ 4 - 1 }}|{{ 1 - 2 ~ 3 }}|{{ 1 ~ 2 - 3 }}|{{ "a" + 2 - 3 }}|{{ x ~ y ~ 1 + 1 }}', '[40]|40|410|123|true|63|-13|9|NaN|pnull11'),
        (TESTED, '{% if o is iterable %}Y{% endif %}|{% if l is iterable %}Y{% endif %}|{% if a is iterable %}Y{% endif %}|{% if missing is escaped %}Y{% endif %}|{% if a | safe is escaped %}Y{% endif %}', '|Y|Y||Y'),
        (CENTERED, '[{{ z + z | center(9) }}]|[{{ n | center(5) }}]|[{{ b | center(6) }}]|[{{ f | center(6) }}]|[{{ l | center(8) }}]|[{{ missing | center(4) }}]|[{{ o | center(4) }}]|[{{ a | center(9) }}]', '[00]|[3]|[true]|[      ]|[   1,2   ]|[    ]|[[object Object]]|[   Hi    ]'),
        (SAFE, '[{{ e | center(9) }}]|[{{ o | string | length }}]|[{{ "x" if e | escape else "no" }}]|[{{ "x" if e | safe else "no" }}]|[{{ b | string == "true" }}]', '[         ]|[15]|[x]|[x]|[true]'),
        (LISTS, "[{{ l | truncate(4, true, '..') }}]|[{{ l | truncate(3) | length }}]", '[3,1,2]|[3]'),
        (LISTS, '[{{ ((missing | dump) <= (w | first)) < true }}]|[{{ missing | dump }}]|[{{ (missing | dump) + 1 }}]', '[true]|[]|[NaN]'),
        (SCALARS, '{{ z | wordcount }}|{{ (z | wordcount) > 0 }}|{{ a | wordcount }}', '|false|1'),
        (LISTS, '{{ l | sort | join("-") }}|{{ l | first }}|{{ l | last }}|{{ l | reverse | join }}|{{ l | batch(2) | length }}|{{ l | select("odd") | join }}|{{ l | reject("odd") | join }}|{{ w | sort(true) | join }}|{{ a | first }}|{{ a | last }}', '1-2-3|3|2|213|2|31|2|cba|H|o'),
        (SCALARS, "{{ z | groupby('x') | dump }}|{{ n | groupby('x') | dump }}|{{ b | groupby('x') | dump }}|{{ s | groupby('x') | dump }}", '{}|{}|{}|{"undefined":["a","b","c"]}'),
        (LOOP_VARS, '{% for k, v in obj %}{{ loop.index }}{{ k }}{% endfor %}', '1b2a'),
        (LOOP_VARS, '{% for x in "" %}{{ x }}{% else %}blank{% endfor %}', 'blank'),
        (LOOP_VARS, '{% for x in nums %}{% for y in nums %}{{ x }}{{ y }} {% endfor %}{% endfor %}', '33 31 13 11 '),
        # groupby: an object of groups in first-seen order, integer-like keys first
        (PEOPLE, '{% for g, items in people | groupby("team") %}{{ g }}:{{ items | join("/", "name") }};{% endfor %}', 'red:Ann/Cid;blue:Bob;amber:Dee;'),
        (PEOPLE, '{{ people | groupby("team") }}', '[object Object]'),
        (PEOPLE, '{% for g, items in people | groupby("n") %}{{ g }}={{ items | length }};{% endfor %}', '1=1;2=2;z=1;'),
        (PEOPLE, '{% for g, items in people | groupby("x.y") %}{{ g }}={{ items | length }};{% endfor %}', 'a=1;undefined=2;b=1;'),
        # a `set` in a loop reaches the variable set before it; loop targets and macro parameters keep their scope
        (SCOPE_VARS, '{% set t=0 %}{% for x in [3,1,2] %}{% set t=t+x %}{% endfor %}{{t}}', '6'),
        (SCOPE_VARS, '{% set seen = "" %}{% for x in nums %}{% if x > 1 %}{% set seen = seen ~ x %}{% endif %}{% endfor %}[{{ seen }}]', '[32]'),
        (SCOPE_VARS, '{% for x in nums %}{% set y = x %}{% endfor %}[{{ y }}]', '[]'),
        (SCOPE_VARS, '{% set x = "out" %}{% for x in nums %}{% set x = 9 %}{% endfor %}{{ x }}', 'out'),
        (SCOPE_VARS, '{% set n = 1 %}{% for a in nums %}{% for b in nums %}{% set n = n + 1 %}{% endfor %}{% endfor %}{{ n }}', '10'),
        (SCOPE_VARS, '{% set t = 5 %}{% macro m(t) %}{{ t }}{% endmacro %}{% for x in nums %}{% set t = t + 1 %}{% endfor %}{{ t }}|{{ m(1) }}', '8|1'),
        (SCOPE_VARS, '{% set t = 0 %}{{ t }}{% for x in nums %}{{ t }}{% set t = t + x %}{% endfor %}{{ t }}', '00346'),
    ],
)  # fmt: skip
def test_renders_as_nunjucks(variables: dict[str, object], template: str, expected: str) -> None:
    assert nunjucks.render(template, variables) == expected


def test_csv_numbers_compare_and_add_as_in_javascript() -> None:
    """CSV values are text: `score > 3` compares as numbers and `score + 1` appends, as in promptfoo
    (Python refused the comparison, so the row was an error)."""
    assert nunjucks.render("{% if score > 3 %}high{% else %}low{% endif %} {{ score + 1 }} {{ score * 1 + 1 }}", {"score": "4"}) == "high 41 5"

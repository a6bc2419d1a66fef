# Writes jinja2_cases.jsonl: small templates rendered by Python Jinja2 (3.1.6) configured as
# transformers configures it for chat templates (ImmutableSandboxedEnvironment, trim_blocks,
# lstrip_blocks, loopcontrols, tojson without HTML escaping). Needs a Python with jinja2;
# run by hand when adding cases: python3 make_python_cases.py > jinja2_cases.jsonl
import json, jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
env.filters["tojson"] = tojson
ctx = {"d": {"b": 1, "A": [1, 2.5, None, True, "x'y"], "c": {"k": "v"}}, "xs": [3, 1, 2, 1], "s": "  Hello, World  ", "u": "naïve ß", "n": None, "f": 2.675, "users": [{"name": "bo", "age": 3, "admin": True}, {"name": "al", "age": 5, "admin": False}]}
cases = [
 "{{ true }} {{ none }} {{ n }} {{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ [1, 'a', none, true] }} {{ d }}",
 "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ u | tojson }}|{{ u | tojson(ensure_ascii=true) }}|{{ d | tojson(sort_keys=true, separators=(',', ':')) }}",
 "{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d.items() %}{{ k }}{% endfor %}|{{ d.keys() | list }}|{{ d.get('zz', 7) }}|{{ d.get('b') }}",
 "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a','b') }} {% endfor %}",
 "{% for x in xs if x > 1 %}{{ x }}:{{ loop.length }} {% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in xs %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in xs %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}",
 "{{ s | trim }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.split(',') }}|{{ s.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ s | upper }}|{{ s | lower }}|{{ u.upper() }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}",
 "{{ s.replace('l', 'L') }}|{{ s | replace('l', 'L', 2) }}|{{ s.count('l') }}|{{ s.find('World') }}|{{ s.startswith('  He') }}|{{ s.endswith(('x', '  ')) }}|{{ '-'.join(['a','b']) }}|{{ '{} and {}'.format(1, 'two') }}|{{ '%s=%d (%.2f)' | format('x', 3, 2.5) }}|{{ '%-5s|' % 'ab' }}",
 "{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | sort }} {{ xs | sort(reverse=true) }} {{ xs | unique | list }} {{ xs | sum }} {{ xs | max }} {{ xs | min }} {{ xs | reverse | list }} {{ xs | join('-') }} {{ u | length }} {{ u | list }}",
 "{{ users | map(attribute='name') | join(',') }}|{{ users | selectattr('admin') | map(attribute='name') | list }}|{{ users | rejectattr('admin') | list }}|{{ users | selectattr('age', 'gt', 4) | map(attribute='name') | first }}|{{ xs | select('odd') | list }}|{{ xs | reject('odd') | list }}|{{ ['a','b'] | map('upper') | list }}|{{ users | sort(attribute='age', reverse=true) | map(attribute='name') | join }}|{{ users | sum(attribute='age') }}",
 "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 1 ~ 2 ~ none }} {{ 3 - 5 * 2 }} {{ (3 - 5) * 2 }} {{ -3 | abs }} {{ f | round(2) }} {{ 2.5 | round }} {{ 3.7 | round(method='floor') }} {{ 5 | round }}",
 "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 2 in xs }} {{ 9 not in xs }} {{ 'b' in d }} {{ not true }} {{ 1 == 1.0 }} {{ '1' == 1 }} {{ [1, 2] == [1, 2] }} {{ none is none }} {{ x is defined }} {{ d is mapping }} {{ xs is sequence }} {{ s is string }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ 4 is divisibleby 2 }} {{ 2 is in xs }} {{ f is eq 2.675 }}",
 "{{ 'yes' if xs else 'no' }} {{ 'yes' if [] else 'no' }} {{ 'x' if false }}| {{ xs[0] }} {{ xs[-1] }} {{ xs[1:3] }} {{ xs[::-1] }} {{ xs[::2] }} {{ s[2:7] }} {{ u[-2:] }} {{ u[0] }} {{ d['c']['k'] }} {{ d.c.k }} {{ d.missing }} {{ xs[10] }} {{ xs.0 }}",
 "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 2) %}{{ t }} {% set ns = namespace(c=0, items=[]) %}{% for x in xs %}{% set ns.c = ns.c + x %}{% endfor %}{{ ns.c }} {% set blk %}in {{ a }} block{% endset %}{{ blk | upper }} {% set z = 1 %}{% for x in xs %}{% set z = x %}{% endfor %}{{ z }}",
 "{% macro greet(name, punct='!', upper=false) -%}Hi {{ name | upper if upper else name }}{{ punct }}{%- endmacro %}{{ greet('bo') }} {{ greet('al', '?') }} {{ greet('cy', upper=true) }} {{ greet(name='dee', punct='.') }}",
 "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ s | trim }}{% endcall %}|{% macro args() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ args(1, 2, k=3) }}|{% macro fact(n) %}{{ 1 if n <= 1 else n * fact(n - 1) | int }}{% endmacro %}{{ fact(5) }}",
 "{% filter upper %}shout {{ s | trim }}{% endfilter %}|{{ 'a\\tb\\n' | tojson }}|{{ \"it's\" }}|{{ 'x' 'y' }}|{{ '\\u00e9\\x41' }}|{# comment #}|{{ 'line1\\nline2' | indent(2) }}|{{ 'line1\\nline2' | indent(2, first=true) }}|{{ '<a&b>' | e }}|{{ d | length }}|{{ 'abc' | reverse }}|{{ '12' | int + 1 }}|{{ '3.5' | float }}|{{ 'x' | int }}|{{ 3.9 | int }}|{{ xs | string }}",
 "a\n  {% if true %}\n    yes\n  {% endif %}\nb\n{% for x in xs -%}\n  {{ x }}\n{%- endfor %}\nc {%- if true %} d {% endif -%} e\n  {#- c -#}  f\n  {%+ if true %}g{% endif %}\n{{ 'h' -}}\n   i\n",
 "{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b=2) }} {{ namespace(a=1).a }} {{ d | dictsort(reverse=true) | first }} {{ d | dictsort(by='value') if false else 'skip' }} {{ xs | batch if false else '' }}",
]
for c in cases:
    try:
        out = env.from_string(c).render(**ctx)
    except Exception as e:
        out = "ERROR: " + repr(e)
    print(json.dumps({"t": c, "out": out}, ensure_ascii=False))
print(json.dumps({"ctx": ctx}))

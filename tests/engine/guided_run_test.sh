#!/usr/bin/env bash
# `ringlm run --json-schema` on the demo-size model (random weights, real Gemma vocabulary),
# sampling at temperature 1 with several seeds: every reply must parse, validate against its
# schema (Python's jsonschema plus explicit format checks) and end where the JSON ends.
set -euo pipefail
mkdir -p "$RINGLM_TMP" && cd "$RINGLM_TMP"
rm -rf model schemas && mkdir schemas
"$RINGLM" make-test-model model --preset demo --seed 5 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
cat > schemas/enums.json <<'J'
{"type":"object","properties":{"color":{"enum":["red","green","blue"]},"size":{"type":"string","enum":["S","M","L","XL"]},"flag":{"const":true}},"required":["color","size","flag"],"additionalProperties":false}
J
cat > schemas/nested.json <<'J'
{"type":"object","properties":{"user":{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":130}},"required":["name","age"],"additionalProperties":false},"active":{"type":"boolean"}},"required":["user","active"],"additionalProperties":false}
J
cat > schemas/arrays.json <<'J'
{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":2,"maxItems":4},"scores":{"type":"array","items":{"type":"number","minimum":0,"maximum":1},"maxItems":3}},"required":["tags","scores"],"additionalProperties":false}
J
cat > schemas/optional.json <<'J'
{"type":"object","properties":{"id":{"type":"integer","minimum":1,"maximum":99999},"note":{"type":"string","maxLength":20},"score":{"type":["number","null"],"minimum":-10,"maximum":10}},"required":["id"],"additionalProperties":false}
J
cat > schemas/formats.json <<'J'
{"type":"object","properties":{"day":{"type":"string","format":"date"},"at":{"type":"string","format":"date-time"},"mail":{"type":"string","format":"email","maxLength":30},"uid":{"type":"string","format":"uuid"},"ip":{"type":"string","format":"ipv4"}},"required":["day","at","mail","uid","ip"],"additionalProperties":false}
J
cat > schemas/defs.json <<'J'
{"$defs":{"pt":{"type":"object","properties":{"x":{"type":"integer","minimum":0,"maximum":9},"y":{"type":"integer","minimum":0,"maximum":9}},"required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"a":{"$ref":"#/$defs/pt"},"b":{"anyOf":[{"$ref":"#/$defs/pt"},{"type":"null"}]}},"required":["a","b"],"additionalProperties":false}
J
for s in schemas/*.json; do
  for seed in 1 2 3; do
    "$RINGLM" run --model model --prompt "Fill in the form." --json-schema "$s" \
      --temperature 1 --seed $seed --max-tokens 400 > "$s.$seed.out" 2>/dev/null
  done
done
"$RINGLM_PYTHON" - <<'PY'
import glob, json, re, jsonschema
checks = {
    "date": re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"),
    # RFC 3339 5.6: "T" and "Z" may also be lower case.
    "date-time": re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"),
    "uuid": re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"),
}
def formats(schema, value):
    if isinstance(schema, dict) and isinstance(value, dict):
        for k, sub in schema.get("properties", {}).items():
            if k in value:
                f = sub.get("format")
                if f in checks:
                    assert checks[f].match(value[k]), f"{k}={value[k]!r} is not a {f}"
n = 0
for out in sorted(glob.glob("schemas/*.out")):
    schema = json.load(open(out.rsplit(".", 2)[0]))
    text = open(out).read()
    assert text.endswith("\n"), out
    value = json.loads(text[:-1])  # the whole reply is exactly one JSON value
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
    formats(schema, value)
    n += 1
assert n == 18, n
print(f"{n} passed, 0 failed: every guided reply parses and validates")
PY

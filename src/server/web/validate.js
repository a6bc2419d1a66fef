// A small JSON Schema check for the extraction table (the server constrains every reply to
// the schema already; this shows it, and catches a reply cut short by max_tokens). Covers
// type, enum, const, properties, required, additionalProperties, items, anyOf/oneOf/allOf,
// string/array length, numeric bounds and local $ref. Returns a list of problems.
'use strict';

function validateJson(value, schema) {
  const root = schema;
  const problems = [];
  const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' && Number.isInteger(v) ? 'integer' : typeof v);
  const resolve = (s) => {
    if (s && typeof s.$ref === 'string' && s.$ref.startsWith('#/')) {
      return s.$ref.slice(2).split('/').reduce((o, k) => (o ? o[k.replace(/~1/g, '/').replace(/~0/g, '~')] : o), root);
    }
    return s;
  };
  function check(v, s, at, out) {
    s = resolve(s);
    if (s === true || s === undefined) return;
    if (s === false) { out.push(at + ': not allowed'); return; }
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      const t = typeOf(v);
      if (!types.some((x) => x === t || (x === 'number' && t === 'integer'))) out.push(at + ': expected ' + types.join(' or ') + ', got ' + t);
    }
    if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) out.push(at + ': not one of ' + JSON.stringify(s.enum));
    if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v)) out.push(at + ': must be ' + JSON.stringify(s.const));
    if (typeof v === 'string') {
      const n = [...v].length;
      if (s.minLength !== undefined && n < s.minLength) out.push(at + ': shorter than ' + s.minLength);
      if (s.maxLength !== undefined && n > s.maxLength) out.push(at + ': longer than ' + s.maxLength);
      if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) out.push(at + ': does not match ' + s.pattern);
    }
    if (typeof v === 'number') {
      if (s.minimum !== undefined && v < s.minimum) out.push(at + ': below ' + s.minimum);
      if (s.maximum !== undefined && v > s.maximum) out.push(at + ': above ' + s.maximum);
    }
    if (Array.isArray(v)) {
      if (s.minItems !== undefined && v.length < s.minItems) out.push(at + ': fewer than ' + s.minItems + ' items');
      if (s.maxItems !== undefined && v.length > s.maxItems) out.push(at + ': more than ' + s.maxItems + ' items');
      if (s.items !== undefined) v.forEach((x, i) => check(x, s.items, at + '[' + i + ']', out));
    }
    if (typeOf(v) === 'object') {
      const props = s.properties || {};
      for (const r of s.required || []) if (!(r in v)) out.push(at + ': missing "' + r + '"');
      for (const [k, x] of Object.entries(v)) {
        if (k in props) check(x, props[k], at + '.' + k, out);
        else if (s.additionalProperties === false) out.push(at + ': unexpected "' + k + '"');
        else if (typeof s.additionalProperties === 'object') check(x, s.additionalProperties, at + '.' + k, out);
      }
    }
    for (const sub of s.allOf || []) check(v, sub, at, out);
    for (const key of ['anyOf', 'oneOf']) {
      if (!s[key]) continue;
      const passing = s[key].filter((sub) => { const o = []; check(v, sub, at, o); return o.length === 0; }).length;
      if (passing === 0 || (key === 'oneOf' && passing > 1)) out.push(at + ': matches ' + passing + ' of its ' + key + ' choices');
    }
  }
  check(value, schema, '$', problems);
  return problems;
}

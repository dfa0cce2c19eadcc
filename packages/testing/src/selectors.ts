/**
 * Label and field selectors with apimachinery's grammar (`labels.Parse`, `fields.ParseSelector`):
 * `=`, `==`, `!=`, `in`, `notin`, bare key (exists), `!key` (does not exist), `>`/`<` on integers.
 */

import { ReconcileLoopError } from '@reconcile-loop/primitives';

/** One parsed label requirement. */
export interface LabelRequirement {
  key: string;
  op: 'exists' | '!exists' | '=' | '!=' | 'in' | 'notin' | 'gt' | 'lt';
  values: string[];
}

/** A selector parse failure; the HTTP layer answers it with a 400 Status carrying `message`. */
export class SelectorParseError extends ReconcileLoopError {
  readonly code = 'RL_APISERVER_SELECTOR' as const;
}

const NAME_RE = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a valid label key, or undefined. */
export function labelKeyError(key: string): string | undefined {
  const slash = key.indexOf('/');
  let name = key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    name = key.slice(slash + 1);
    if (prefix.length === 0) return 'prefix part must be non-empty';
    if (prefix.length > 253 || !DNS1123_SUBDOMAIN_RE.test(prefix)) {
      return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    }
  }
  if (name.length === 0) return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!NAME_RE.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** Why `value` is not a valid label value, or undefined. */
export function labelValueError(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!NAME_RE.test(value)) {
    return "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

type Tok =
  | { t: 'id'; v: string }
  | { t: 'in' }
  | { t: 'notin' }
  | { t: '!' }
  | { t: '=' }
  | { t: '==' }
  | { t: '!=' }
  | { t: '>' }
  | { t: '<' }
  | { t: ',' }
  | { t: '(' }
  | { t: ')' }
  | { t: 'end' };

const SPECIAL = new Set(['!', '=', ',', '(', ')', '<', '>']);

function lex(input: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '!' && input[i + 1] === '=') {
      out.push({ t: '!=' });
      i += 2;
    } else if (c === '=' && input[i + 1] === '=') {
      out.push({ t: '==' });
      i += 2;
    } else if (SPECIAL.has(c)) {
      out.push({ t: c as '!' | '=' | ',' | '(' | ')' | '<' | '>' });
      i++;
    } else {
      let j = i;
      while (j < input.length && !SPECIAL.has(input[j]!) && !/\s/.test(input[j]!)) j++;
      const word = input.slice(i, j);
      if (word === 'in') out.push({ t: 'in' });
      else if (word === 'notin') out.push({ t: 'notin' });
      else out.push({ t: 'id', v: word });
      i = j;
    }
  }
  out.push({ t: 'end' });
  return out;
}

function show(t: Tok): string {
  return t.t === 'id' ? t.v : t.t === 'end' ? '' : t.t;
}

/** Parses a label selector; the empty string selects everything. Throws {@link SelectorParseError}. */
export function parseLabelSelector(input: string): LabelRequirement[] {
  const toks = lex(input);
  let p = 0;
  const peek = (): Tok => toks[p]!;
  const next = (): Tok => toks[p++]!;
  const fail = (msg: string): never => {
    throw new SelectorParseError(`unable to parse requirement: ${msg}`);
  };
  const reqs: LabelRequirement[] = [];
  if (peek().t === 'end') return reqs;
  for (;;) {
    let negate = false;
    if (peek().t === '!') {
      negate = true;
      next();
    }
    const k = next();
    if (k.t !== 'id') fail(`found '${show(k)}', expected: identifier`);
    const key = (k as { v: string }).v;
    const ke = labelKeyError(key);
    if (ke !== undefined) fail(`Invalid value: ${JSON.stringify(key)}: ${ke}`);
    const after = peek();
    if (negate) {
      if (after.t !== ',' && after.t !== 'end') fail(`found '${show(after)}', expected: ',' or 'end of string'`);
      reqs.push({ key, op: '!exists', values: [] });
    } else if (after.t === ',' || after.t === 'end') {
      reqs.push({ key, op: 'exists', values: [] });
    } else if (after.t === '=' || after.t === '==' || after.t === '!=' || after.t === '>' || after.t === '<') {
      next();
      const v = peek();
      let value = '';
      if (v.t === 'id') {
        value = v.v;
        next();
      } else if (v.t !== ',' && v.t !== 'end') {
        fail(`found '${show(v)}', expected: identifier`);
      }
      const ve = labelValueError(value);
      if (ve !== undefined) fail(`Invalid value: ${JSON.stringify(value)}: ${ve}`);
      if (after.t === '>' || after.t === '<') {
        if (!/^-?\d+$/.test(value)) fail(`for 'Gt', 'Lt' operators, the value must be an integer`);
        reqs.push({ key, op: after.t === '>' ? 'gt' : 'lt', values: [value] });
      } else {
        reqs.push({ key, op: after.t === '!=' ? '!=' : '=', values: [value] });
      }
    } else if (after.t === 'in' || after.t === 'notin') {
      next();
      const open = next();
      if (open.t !== '(') fail(`found '${show(open)}', expected: '('`);
      const values: string[] = [];
      let expectValue = true;
      for (;;) {
        const v = next();
        if (v.t === 'id') {
          if (!expectValue) fail(`found '${v.v}', expected: ',' or ')'`);
          const ve = labelValueError(v.v);
          if (ve !== undefined) fail(`Invalid value: ${JSON.stringify(v.v)}: ${ve}`);
          values.push(v.v);
          expectValue = false;
        } else if (v.t === ',') {
          // An empty member, as in `(a,,b)`, is the empty-string value.
          if (expectValue) values.push('');
          expectValue = true;
        } else if (v.t === ')') {
          if (expectValue && values.length > 0) values.push('');
          break;
        } else {
          fail(`found '${show(v)}', expected: ',', ')' or identifier`);
        }
      }
      if (values.length === 0) fail(`for 'in', 'notin' operators, values set can't be empty`);
      reqs.push({ key, op: after.t, values });
    } else {
      fail(`found '${show(after)}', expected: in, notin, =, ==, !=, gt, lt`);
    }
    const sep = next();
    if (sep.t === 'end') break;
    if (sep.t !== ',') fail(`found '${show(sep)}', expected: ',' or 'end of string'`);
  }
  return reqs;
}

/** True when `labels` satisfies every requirement. */
export function matchesLabels(reqs: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.hasOwn(l, r.key);
    const v = has ? l[r.key]! : undefined;
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case '!=':
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'gt':
      case 'lt': {
        if (!has || !/^-?\d+$/.test(v!)) return false;
        const a = Number(v);
        const b = Number(r.values[0]);
        if (r.op === 'gt' ? !(a > b) : !(a < b)) return false;
        break;
      }
    }
  }
  return true;
}

/** One parsed field requirement. */
export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

function splitUnescaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1]!;
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

function unescapeValue(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/**
 * Parses a field selector against the fields a resource supports. An unknown field is refused
 * with `unknownFieldMessage(field)`, mirroring the per-resource wording of the real server.
 */
export function parseFieldSelector(
  input: string,
  supported: readonly string[],
  unknownFieldMessage: (field: string) => string,
): FieldRequirement[] {
  const out: FieldRequirement[] = [];
  if (input.trim() === '') return out;
  for (const term of splitUnescaped(input, ',')) {
    let m: RegExpMatchArray | null = null;
    let op: '=' | '!=' | undefined;
    // Scan for the first unescaped operator; `!=` before `==` before `=`.
    for (let i = 0; i < term.length; i++) {
      const c = term[i]!;
      if (c === '\\') {
        i++;
        continue;
      }
      if (c === '!' && term[i + 1] === '=') {
        m = [term, term.slice(0, i), term.slice(i + 2)];
        op = '!=';
        break;
      }
      if (c === '=') {
        const skip = term[i + 1] === '=' ? 2 : 1;
        m = [term, term.slice(0, i), term.slice(i + skip)];
        op = '=';
        break;
      }
    }
    if (m === null || op === undefined || m[1]!.trim() === '') {
      throw new SelectorParseError(`invalid selector: '${input}'; can't understand '${term}'`);
    }
    const field = unescapeValue(m[1]!.trim());
    if (!supported.includes(field)) throw new SelectorParseError(unknownFieldMessage(field));
    out.push({ field, op, value: unescapeValue(m[2]!) });
  }
  return out;
}

/** True when the object's field set satisfies every requirement. */
export function matchesFields(reqs: readonly FieldRequirement[], fields: Readonly<Record<string, string>>): boolean {
  for (const r of reqs) {
    const v = fields[r.field] ?? '';
    if (r.op === '=' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

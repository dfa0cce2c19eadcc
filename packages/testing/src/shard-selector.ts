/**
 * `ListOptions.shardSelector` as kube-apiserver 1.36/1.37 reads it (KEP-5866, feature gate
 * `ShardedListAndWatch`; k8s.io/apiserver pkg/sharding Parse). The real parser hands the text to
 * CEL's parser (no macros) and walks the tree: the root is `shardRange(field, 'start', 'end')` or
 * `||` of such calls, the field `object.metadata.uid` or `object.metadata.namespace` (the same in
 * every range), each bound a string literal of `0x` and 16 lowercase hex digits or `0x1` and 16
 * zeros (2^64), start below end. This module parses the same CEL expression language (literals,
 * operators, calls, selects, lists, maps, messages) so every expression CEL accepts reaches the
 * same walk, and a rejection carries the real walker's words.
 *
 * Syntax errors keep the real answer's shape (`CEL parse error: Syntax error: …`) but not ANTLR's
 * generated wording (its expected-token sets); see ALIGNMENT.md.
 */
import { inShardRanges, shardHash, type ShardRange } from '@reconcile-loop/primitives';
import type { ApiServerObject } from './types.js';

/** The field a selector hashes, as the apiserver names it. */
export type ShardFieldPath = 'object.metadata.uid' | 'object.metadata.namespace';

/** A parsed selector: its field, its ranges in request order, and the canonical `String()` the list echoes. */
export interface ParsedShardSelector {
  readonly field: ShardFieldPath;
  readonly ranges: readonly ShardRange[];
  readonly canonical: string;
}

const GO_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const GO_SPACE_EDGES = new RegExp(`^${GO_SPACE}+|${GO_SPACE}+$`, 'gu');

/** CEL's default parser limits (cel-go parser/options.go): nesting depth and code points. */
const MAX_DEPTH = 250;
const MAX_CODE_POINTS = 100_000;

const RESERVED = new Set([
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
]);

/** cel-go's ast.ExprKind numbers, which the walker prints with %v (the enum has no String()). */
const KIND = { call: 1, ident: 3, list: 4, literal: 5, map: 6, select: 7, struct: 8 } as const;

type Literal =
  | { type: 'string'; value: string }
  | { type: 'int64' | 'uint64' | 'float64' | 'bool' | '[]uint8' | 'structpb.NullValue'; value: unknown };
type Expr =
  | { kind: 'call'; fn: string; args: Expr[] }
  | { kind: 'ident'; name: string }
  | { kind: 'select'; operand: Expr; field: string }
  | { kind: 'literal'; literal: Literal }
  | { kind: 'list' | 'map' | 'struct' };

/** A CEL parse failure; `message` is what cel-go's first error says. */
class CelError extends Error {}

/**
 * Parses `raw` as the apiserver does. Returns the selector, or the error text the real server puts
 * after `invalid shard selector: ` in its 500.
 */
export function parseShardSelector(raw: string): ParsedShardSelector | { error: string } {
  // Go's strings.TrimSpace: unicode.IsSpace, which is JS's \s without U+FEFF and with U+0085.
  const expr = raw.replace(GO_SPACE_EDGES, '');
  if (expr === '') return { error: 'empty shard selector is not allowed; omit the parameter for unfiltered lists' };
  let root: Expr;
  try {
    if ([...expr].length > MAX_CODE_POINTS)
      throw new CelError(`expression code point size exceeds limit: size: ${[...expr].length}, limit ${MAX_CODE_POINTS}`);
    root = new Parser(expr).parseAll();
  } catch (e) {
    if (e instanceof CelError) return { error: `CEL parse error: ${e.message}` };
    throw e;
  }
  const reqs: Array<{ key: string; start: string; end: string }> = [];
  const walked = walk(root, reqs);
  if (walked !== undefined) return { error: walked };
  const key = reqs[0]!.key;
  for (const r of reqs)
    if (r.key !== key) return { error: `all shard ranges must use the same field, got ${goQuote(key)} and ${goQuote(r.key)}` };
  const ranges = reqs.map(({ start, end }) => ({ start, end }));
  return {
    field: key as ShardFieldPath,
    ranges,
    canonical: reqs.map((r) => `shardRange(${r.key}, '${r.start}', '${r.end}')`).join(' || '),
  };
}

/** True when the FNV-1a 64 hash of `o`'s shard field (a cluster-scoped object's namespace is "") is in one of the ranges. */
export function inShard(shard: ParsedShardSelector, o: ApiServerObject): boolean {
  const value = shard.field === 'object.metadata.uid' ? o.metadata.uid : o.metadata.namespace;
  return inShardRanges(shardHash(value ?? ''), shard.ranges);
}

/** The walker: appends the ranges of `e` in order, or returns the first error. */
function walk(e: Expr, out: Array<{ key: string; start: string; end: string }>): string | undefined {
  if (e.kind !== 'call') return `unexpected expression kind ${KIND[e.kind]}; expected shardRange() call or || operator`;
  if (e.fn === '_||_') return walk(e.args[0]!, out) ?? walk(e.args[1]!, out);
  if (e.fn !== 'shardRange') return `unsupported function ${goQuote(e.fn)}; only shardRange() and || are allowed`;
  if (e.args.length !== 3) return `shardRange() requires exactly 3 arguments, got ${e.args.length}`;
  const path = fieldPath(e.args[0]!);
  if (typeof path !== 'string') return `shardRange() first argument: ${path.error}`;
  if (path !== 'object.metadata.uid' && path !== 'object.metadata.namespace')
    return `unsupported field path ${goQuote(path)}; supported: object.metadata.uid, object.metadata.namespace`;
  const start = hexLiteral(e.args[1]!, 'hexStart');
  if (typeof start !== 'string') return start.error;
  const end = hexLiteral(e.args[2]!, 'hexEnd');
  if (typeof end !== 'string') return end.error;
  const less = start.length !== end.length ? start.length < end.length : start < end;
  if (!less) return `shard range start ${start} must be less than end ${end}`;
  out.push({ key: path, start, end });
  return undefined;
}

function fieldPath(e: Expr): string | { error: string } {
  if (e.kind === 'ident') return e.name;
  if (e.kind === 'select') {
    const operand = fieldPath(e.operand);
    return typeof operand === 'string' ? `${operand}.${e.field}` : operand;
  }
  return { error: `expected field path (e.g. object.metadata.uid), got expression kind ${KIND[e.kind]}` };
}

function hexLiteral(e: Expr, name: string): string | { error: string } {
  if (e.kind !== 'literal')
    return { error: `${name} must be a string literal (e.g. '0xff'), got expression kind ${KIND[e.kind]}` };
  if (e.literal.type !== 'string') return { error: `${name} must be a string literal, got ${e.literal.type}` };
  const s = e.literal.value;
  if (!s.startsWith('0x')) return { error: `${name} must have '0x' prefix, got ${goQuote(s)}` };
  const hex = s.slice(2);
  if (hex === '') return { error: `${name}: hex value is required after '0x'` };
  // Go's len() counts bytes; the checks below range over runes.
  const bytes = Buffer.byteLength(hex, 'utf8');
  if (bytes > 17) return { error: `${name}: hex value too long (${bytes} chars, max 17): ${goQuote(hex)}` };
  for (const c of hex) if (!/[0-9a-f]/.test(c)) return { error: `${name}: invalid hex character ${goQuote(c)} in ${goQuote(s)}` };
  if (hex.length === 17) {
    if (s !== '0x10000000000000000')
      return { error: `${name}: 17-digit hex value must be '0x10000000000000000' (2^64), got ${goQuote(s)}` };
  } else if (hex.length !== 16) {
    const padded = `0x${'0'.repeat(16 - hex.length)}${hex}`;
    return { error: `${name} must be a 0x-prefixed 16-digit hex value, got ${goQuote(s)} (did you mean ${goQuote(padded)}?)` };
  }
  return s;
}

/** Go's %q for the strings the walker quotes (printable text; escapes for the rest). */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c === 0xfffd) out += '\\ufffd';
    else if ((c >= 0x80 && c < 0xa0) || c === 0xad) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------------
// Lexer and parser of CEL's grammar (cel-spec langdef.md; cel-go parser/gen/CEL.g4).

type Tok =
  | { t: 'ident'; v: string; at: number }
  | { t: 'op'; v: string; at: number }
  | { t: 'lit'; v: Literal; at: number; invalid?: string }
  | { t: 'eof'; at: number };

const OPS = [
  '||',
  '&&',
  '==',
  '!=',
  '<=',
  '>=',
  '.?',
  '[?',
  '<',
  '>',
  '!',
  '+',
  '-',
  '*',
  '/',
  '%',
  '?',
  ':',
  '.',
  ',',
  '(',
  ')',
  '[',
  ']',
  '{',
  '}',
];

function syntax(msg: string): CelError {
  return new CelError(`Syntax error: ${msg}`);
}

function lex(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f') {
      i++;
      continue;
    }
    if (src.startsWith('//', i)) {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    const at = i;
    // String and bytes literals, with their r/R and b/B prefixes (either order).
    const pre = /^(?:[rR][bB]?|[bB][rR]?)?(?:'''|"""|'|")/.exec(src.slice(i, i + 5));
    if (pre !== null) {
      const head = pre[0];
      const quote = head.replace(/^[rRbB]+/, '');
      const raw = /[rR]/.test(head.slice(0, head.length - quote.length));
      const bytes = /[bB]/.test(head.slice(0, head.length - quote.length));
      i += head.length;
      let text = '';
      for (;;) {
        if (i >= src.length) throw syntax(`token recognition error at: '${src.slice(at)}'`);
        if (src.startsWith(quote, i)) {
          i += quote.length;
          break;
        }
        const ch = src[i]!;
        if (quote.length === 1 && (ch === '\n' || ch === '\r'))
          throw syntax(`token recognition error at: '${src.slice(at, i + 1)}'`);
        if (ch === '\\' && !raw) {
          const [value, len] = escapeSequence(src, i);
          text += value;
          i += len;
          continue;
        }
        if (ch === '\\' && raw && i + 1 < src.length) {
          text += src.slice(i, i + 2);
          i += 2;
          continue;
        }
        text += ch;
        i++;
      }
      out.push({ t: 'lit', v: bytes ? { type: '[]uint8', value: text } : { type: 'string', value: text }, at });
      continue;
    }
    const num = /^(?:0x[0-9a-fA-F]+[uU]?|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[uU]?)/.exec(src.slice(i));
    if (num !== null && /\d/.test(c === '.' ? (src[i + 1] ?? '') : c)) {
      const v = num[0];
      i += v.length;
      const isDouble = !v.startsWith('0x') && /[.eE]/.test(v);
      if (isDouble && /[uU]$/.test(v)) throw syntax(`extraneous input 'u'`);
      if (isDouble) out.push({ t: 'lit', v: { type: 'float64', value: Number(v) }, at });
      else if (/[uU]$/.test(v)) {
        const n = BigInt(v.slice(0, -1));
        out.push({
          t: 'lit',
          v: { type: 'uint64', value: n },
          at,
          ...(n >= 2n ** 64n ? { invalid: 'invalid uint literal' } : {}),
        });
      } else {
        const n = BigInt(v);
        const last = out.at(-1);
        const fits = n < 2n ** 63n || (n === 2n ** 63n && last?.t === 'op' && last.v === '-');
        out.push({ t: 'lit', v: { type: 'int64', value: n }, at, ...(fits ? {} : { invalid: 'invalid int literal' }) });
      }
      continue;
    }
    const id = /^[_a-zA-Z][_a-zA-Z0-9]*/.exec(src.slice(i));
    if (id !== null) {
      i += id[0].length;
      const v = id[0];
      if (v === 'true' || v === 'false') out.push({ t: 'lit', v: { type: 'bool', value: v === 'true' }, at });
      else if (v === 'null') out.push({ t: 'lit', v: { type: 'structpb.NullValue', value: null }, at });
      else out.push({ t: 'ident', v, at });
      continue;
    }
    if (c === '`') {
      const end = src.indexOf('`', i + 1);
      if (end < 0) throw syntax(`token recognition error at: '${src.slice(at)}'`);
      out.push({ t: 'ident', v: `\`${src.slice(i + 1, end)}\``, at });
      i = end + 1;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (op === undefined) {
      // ANTLR's lexer reports what it consumed: a lone `|` or `&` with the character after it (it was trying `||`/`&&`).
      const first = String.fromCodePoint(src.codePointAt(i)!);
      const next = (c === '|' || c === '&') && i + 1 < src.length ? String.fromCodePoint(src.codePointAt(i + 1)!) : '';
      throw syntax(`token recognition error at: '${first}${next}'`);
    }
    // `in` is a keyword operator; it lexes as an identifier above and is turned into one below.
    out.push({ t: 'op', v: op, at });
    i += op.length;
  }
  out.push({ t: 'eof', at: src.length });
  return out;
}

/** One escape sequence at `src[i]` (a backslash): its text and length. */
function escapeSequence(src: string, i: number): [string, number] {
  const n = src[i + 1];
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '`': '`',
    '?': '?',
  };
  if (n !== undefined && simple[n] !== undefined) return [simple[n]!, 2];
  const hex = (len: number): [string, number] => {
    const h = src.slice(i + 2, i + 2 + len);
    if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(h)) throw syntax(`token recognition error at: '${src.slice(i, i + 2)}'`);
    const cp = parseInt(h, 16);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) throw new CelError('invalid unicode code point');
    return [String.fromCodePoint(cp), 2 + len];
  };
  if (n === 'x' || n === 'X') return hex(2);
  if (n === 'u') return hex(4);
  if (n === 'U') return hex(8);
  const oct = /^[0-3][0-7][0-7]/.exec(src.slice(i + 1, i + 4));
  if (oct !== null) return [String.fromCharCode(parseInt(oct[0], 8)), 4];
  throw syntax(`token recognition error at: '${src.slice(i, i + 2)}'`);
}

class Parser {
  readonly #toks: Tok[];
  #i = 0;
  #depth = 0;
  #deferred: string | undefined;
  /** Token indexes of the `(` that open a call's arguments. */
  readonly #callOpen = new Set<number>();

  constructor(src: string) {
    this.#toks = lex(src);
  }

  parseAll(): Expr {
    const e = this.#expr();
    const t = this.#peek();
    if (t.t !== 'eof') throw syntax(`extraneous input ${this.#show(t)} expecting <EOF>`);
    // The visitor's errors (literals, reserved words) come after the whole parse, as in cel-go.
    if (this.#deferred !== undefined) throw new CelError(this.#deferred);
    return e;
  }

  #defer(message: string): void {
    this.#deferred ??= message;
  }

  /** ANTLR's expected-token set where an expression starts; right after `(` of a call, `)` too. */
  #exprStart(): string {
    const prev = this.#toks[this.#i - 1];
    const close = prev !== undefined && prev.t === 'op' && prev.v === '(' && this.#callOpen.has(this.#i - 1) ? " ')'," : '';
    return `{'[', '{', '(',${close} '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`;
  }

  #peek(): Tok {
    return this.#toks[this.#i]!;
  }

  #isOp(v: string): boolean {
    const t = this.#peek();
    return t.t === 'op' && t.v === v;
  }

  #isIn(): boolean {
    const t = this.#peek();
    return t.t === 'ident' && t.v === 'in';
  }

  #show(t: Tok): string {
    if (t.t === 'eof') return "'<EOF>'";
    if (t.t === 'lit') return 'literal';
    return `'${t.v}'`;
  }

  #expect(v: string): void {
    if (!this.#isOp(v)) {
      const t = this.#peek();
      throw syntax(t.t === 'eof' ? `missing '${v}' at '<EOF>'` : `mismatched input ${this.#show(t)} expecting '${v}'`);
    }
    this.#i++;
  }

  #enter(): void {
    if (++this.#depth > MAX_DEPTH) throw new CelError(`expression recursion limit exceeded: ${MAX_DEPTH}`);
  }

  #expr(): Expr {
    this.#enter();
    const cond = this.#or();
    let e = cond;
    if (this.#isOp('?')) {
      this.#i++;
      const a = this.#or();
      this.#expect(':');
      const b = this.#expr();
      e = { kind: 'call', fn: '_?_:_', args: [cond, a, b] };
    }
    this.#depth--;
    return e;
  }

  /** `||` chains: cel-go balances them into a tree whose in-order walk keeps the source order. */
  #or(): Expr {
    const parts = [this.#and()];
    while (this.#isOp('||')) {
      this.#i++;
      parts.push(this.#and());
    }
    return balance('_||_', parts);
  }

  #and(): Expr {
    const parts = [this.#relation()];
    while (this.#isOp('&&')) {
      this.#i++;
      parts.push(this.#relation());
    }
    return balance('_&&_', parts);
  }

  #relation(): Expr {
    let e = this.#calc(0);
    for (;;) {
      const t = this.#peek();
      const op = t.t === 'op' && ['<', '<=', '>', '>=', '==', '!='].includes(t.v) ? t.v : this.#isIn() ? 'in' : undefined;
      if (op === undefined) return e;
      this.#i++;
      e = { kind: 'call', fn: op === 'in' ? '@in' : `_${op}_`, args: [e, this.#calc(0)] };
    }
  }

  /** Level 0: `+ -`; level 1: `* / %`. */
  #calc(level: 0 | 1): Expr {
    let e = level === 0 ? this.#calc(1) : this.#unary();
    const ops = level === 0 ? ['+', '-'] : ['*', '/', '%'];
    for (;;) {
      const t = this.#peek();
      if (t.t !== 'op' || !ops.includes(t.v)) return e;
      this.#i++;
      e = { kind: 'call', fn: `_${t.v}_`, args: [e, level === 0 ? this.#calc(1) : this.#unary()] };
    }
  }

  #unary(): Expr {
    if (this.#isOp('!') || this.#isOp('-')) {
      const op = (this.#peek() as { v: string }).v;
      let n = 0;
      while (this.#isOp(op)) {
        this.#i++;
        n++;
      }
      const t = this.#peek();
      // A negated number is one literal (`-1`), as CEL's grammar reads it.
      if (
        op === '-' &&
        t.t === 'lit' &&
        (t.v.type === 'int64' || t.v.type === 'float64') &&
        this.#toks[this.#i - 1]!.at === t.at - 1
      ) {
        this.#i++;
        const neg: Expr = {
          kind: 'literal',
          literal: { type: t.v.type, value: t.v.type === 'int64' ? -(t.v.value as bigint) : -(t.v.value as number) },
        };
        return this.#postfix(n - 1 === 0 ? neg : wrapNeg(neg, n - 1));
      }
      this.#enter();
      const operand = this.#member();
      this.#depth--;
      if (n % 2 === 0) return operand;
      return { kind: 'call', fn: op === '!' ? '!_' : '-_', args: [operand] };
    }
    return this.#member();
  }

  #member(): Expr {
    return this.#postfix(this.#primary());
  }

  #postfix(start: Expr): Expr {
    let e = start;
    for (;;) {
      if (this.#isOp('.?') || this.#isOp('[?')) {
        // Optional syntax is off in the apiserver's parser: reported after the parse, read as `.` / `[`.
        const t = this.#peek() as { v: string };
        this.#defer(`unsupported syntax '${t.v}'`);
        t.v = t.v[0]!;
      }
      if (this.#isOp('.')) {
        this.#i++;
        const id = this.#peek();
        if (id.t !== 'ident') throw syntax(`mismatched input ${this.#show(id)} expecting IDENTIFIER`);
        if (id.v === 'in') throw syntax(`no viable alternative at input '.in'`);
        this.#i++;
        const field = id.v.startsWith('`') ? id.v.slice(1, -1) : id.v;
        if (this.#isOp('(')) e = { kind: 'call', fn: field, args: this.#args() };
        else e = { kind: 'select', operand: e, field };
        continue;
      }
      if (this.#isOp('[')) {
        this.#i++;
        const index = this.#expr();
        this.#expect(']');
        e = { kind: 'call', fn: '_[_]', args: [e, index] };
        continue;
      }
      if (this.#isOp('{') && (e.kind === 'ident' || e.kind === 'select')) {
        this.#skipBraces();
        e = { kind: 'struct' };
        continue;
      }
      return e;
    }
  }

  #args(): Expr[] {
    this.#callOpen.add(this.#i);
    this.#expect('(');
    const args: Expr[] = [];
    if (this.#isOp(')')) {
      this.#i++;
      return args;
    }
    for (;;) {
      args.push(this.#expr());
      if (this.#isOp(',')) {
        this.#i++;
        continue;
      }
      this.#expect(')');
      return args;
    }
  }

  /** A map or message literal `{…}`: parsed for syntax, kept only as its kind. */
  #skipBraces(): void {
    this.#expect('{');
    while (!this.#isOp('}')) {
      this.#expr();
      if (this.#isOp(':')) {
        this.#i++;
        this.#expr();
      }
      if (this.#isOp(',')) this.#i++;
      else break;
    }
    this.#expect('}');
  }

  #primary(): Expr {
    const t = this.#peek();
    this.#enter();
    try {
      if (t.t === 'lit') {
        this.#i++;
        if (t.invalid !== undefined) this.#defer(t.invalid);
        return { kind: 'literal', literal: t.v };
      }
      if (t.t === 'ident' || (t.t === 'op' && t.v === '.')) {
        let name = '';
        if (t.t === 'op') {
          this.#i++;
          const id = this.#peek();
          if (id.t !== 'ident')
            throw syntax(`no viable alternative at input '.${id.t === 'eof' ? '' : id.t === 'lit' ? '' : id.v}'`);
          name = '.';
        }
        const id = this.#peek() as { v: string };
        if (id.v.startsWith('`')) throw syntax(`token recognition error at: '\`'`);
        if (id.v === 'in') throw syntax(`mismatched input 'in' expecting ${this.#exprStart()}`);
        this.#i++;
        name += id.v;
        if (RESERVED.has(id.v)) this.#defer(`reserved identifier: ${id.v}`);
        if (this.#isOp('(')) return { kind: 'call', fn: name, args: this.#args() };
        return { kind: 'ident', name };
      }
      if (t.t === 'op' && t.v === '(') {
        this.#i++;
        const e = this.#expr();
        this.#expect(')');
        return e;
      }
      if (t.t === 'op' && t.v === '[') {
        this.#i++;
        while (!this.#isOp(']')) {
          this.#expr();
          if (this.#isOp(',')) this.#i++;
          else break;
        }
        this.#expect(']');
        return { kind: 'list' };
      }
      if (t.t === 'op' && t.v === '{') {
        this.#skipBraces();
        return { kind: 'map' };
      }
      throw syntax(`mismatched input ${this.#show(t)} expecting ${this.#exprStart()}`);
    } finally {
      this.#depth--;
    }
  }
}

function wrapNeg(e: Expr, n: number): Expr {
  return n % 2 === 0 ? e : { kind: 'call', fn: '-_', args: [e] };
}

/** A balanced tree of `fn` over `parts` (in-order = source order), as cel-go's balancer builds. */
function balance(fn: string, parts: Expr[]): Expr {
  if (parts.length === 1) return parts[0]!;
  const mid = parts.length >> 1;
  return { kind: 'call', fn, args: [balance(fn, parts.slice(0, mid)), balance(fn, parts.slice(mid))] };
}

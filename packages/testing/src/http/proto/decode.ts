/**
 * Decodes an `application/vnd.kubernetes.protobuf` request body into the JSON object the rest of the
 * server reads, the way kube-apiserver's protobuf serializer does: the `k8s\0` magic, then a
 * `runtime.Unknown` envelope (typeMeta, raw, contentEncoding, contentType) whose `raw` is the message
 * of the kind typeMeta names. Messages follow the table generated from the published `.proto` files
 * (`schema.generated.ts`); the JSON produced is what Go's `encoding/json` would write for the decoded
 * struct: zero values of non-pointer fields left out (`omitempty`), embedded structs inlined, and the
 * types with their own JSON form (Time, MicroTime, Duration, Quantity, IntOrString, RawExtension,
 * FieldsV1, list wrappers such as Verbs) written in it.
 */
import { setOwn } from '../../engine/json-safe.js';
import { PROTO_GROUPS, PROTO_MESSAGES } from './schema.generated.js';
import { WIRE_BYTES, WIRE_END_GROUP, WIRE_FIXED32, WIRE_FIXED64, WIRE_VARINT, WireError, WireReader } from './wire.js';

/** The media type client-go's typed clients send built-in kinds in. */
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** `k8s\0`, the magic every Kubernetes protobuf body starts with. */
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

type Field = readonly [number, string, string | number, string?];
interface Message {
  readonly name: string;
  readonly byNumber: ReadonlyMap<number, Field>;
  /** A type with its own JSON form, written by {@link special}. */
  readonly special: Special | undefined;
}
type Special = 'time' | 'microtime' | 'duration' | 'quantity' | 'intorstring' | 'raw' | 'list';

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1.';
const SPECIAL: Readonly<Record<string, Special>> = {
  [`${META}Time`]: 'time',
  [`${META}MicroTime`]: 'microtime',
  [`${META}Duration`]: 'duration',
  [`${META}FieldsV1`]: 'raw',
  'k8s.io.apimachinery.pkg.api.resource.Quantity': 'quantity',
  'k8s.io.apimachinery.pkg.util.intstr.IntOrString': 'intorstring',
  'k8s.io.apimachinery.pkg.runtime.RawExtension': 'raw',
};

let table: { messages: Message[]; byName: Map<string, number> } | undefined;

/** The table, indexed on first use (most servers never see a protobuf body). */
function schema(): { messages: Message[]; byName: Map<string, number> } {
  if (table !== undefined) return table;
  const messages: Message[] = [];
  const byName = new Map<string, number>();
  for (const [name, fields] of PROTO_MESSAGES) {
    let special = SPECIAL[name];
    // A Go slice type (`type Verbs []string`) is a message of one repeated `items`: JSON writes the slice.
    if (special === undefined && fields.length === 1 && fields[0]![0] === 1 && fields[0]![1] === 'items' && fields[0]![3] === 'r')
      special = 'list';
    byName.set(name, messages.length);
    messages.push({ name, byNumber: new Map(fields.map((f) => [f[0], f])), special });
  }
  table = { messages, byName };
  return table;
}

/** A message name the table knows for `kind` sent under `apiVersion` (meta/v1 options kinds from any group). */
export function protobufMessageFor(apiVersion: string, kind: string): string | undefined {
  const { byName } = schema();
  const pkg = PROTO_GROUPS[apiVersion];
  if (pkg !== undefined && byName.has(`${pkg}.${kind}`)) return `${pkg}.${kind}`;
  if (['DeleteOptions', 'CreateOptions', 'UpdateOptions', 'PatchOptions'].includes(kind) && byName.has(`${META}${kind}`))
    return `${META}${kind}`;
  return undefined;
}

/** Why a body failed to decode, and what the server knew of its kind by then (for the Status wording). */
export class ProtobufBodyError extends Error {
  /** typeMeta of the envelope once read (the apiserver words the 400 differently before and after). */
  readonly typeMeta: { apiVersion: string; kind: string } | undefined;
  constructor(message: string, typeMeta: { apiVersion: string; kind: string } | undefined) {
    super(message);
    this.typeMeta = typeMeta;
  }
}

/** Deeper than this many nested messages is refused: no kind nests near it, and recursion must stay bounded. */
const MAX_MESSAGE_DEPTH = 100;

/**
 * The JSON form of a protobuf body sent for `expect` (the route's kind): typeMeta's apiVersion and
 * kind (the route's when the envelope leaves them empty, as `copyKindDefaults` does), then the fields.
 */
export function decodeProtobufBody(body: Buffer, expect: { apiVersion: string; kind: string }): Record<string, unknown> {
  if (body.length === 0) throw new ProtobufBodyError('empty data', undefined);
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    throw new ProtobufBodyError(
      'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]',
      undefined,
    );
  if (body.length === MAGIC.length) throw new ProtobufBodyError('empty body', undefined);
  let envelope: { apiVersion: string; kind: string; raw: Buffer };
  try {
    envelope = readUnknown(new WireReader(body, MAGIC.length));
  } catch (e) {
    if (e instanceof WireError) throw new ProtobufBodyError(e.message, undefined);
    throw e;
  }
  const apiVersion = envelope.apiVersion === '' ? expect.apiVersion : envelope.apiVersion;
  const kind = envelope.kind === '' ? expect.kind : envelope.kind;
  const typeMeta = { apiVersion, kind };
  const name = protobufMessageFor(apiVersion, kind);
  if (name === undefined) {
    throw new ProtobufBodyError(
      `no kind "${kind}" is registered for version "${apiVersion}" in scheme "pkg/api/legacyscheme/scheme.go:30"`,
      typeMeta,
    );
  }
  const out: Record<string, unknown> = { apiVersion, kind };
  try {
    const { messages, byName } = schema();
    const value = decodeMessage(messages, byName.get(name)!, new WireReader(envelope.raw), 0);
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      for (const [k, v] of Object.entries(value)) setOwn(out, k, v);
  } catch (e) {
    if (e instanceof WireError) throw new ProtobufBodyError(e.message, typeMeta);
    throw e;
  }
  return out;
}

/** runtime.Unknown: typeMeta (1: apiVersion, 2: kind), raw (2), contentEncoding (3), contentType (4). */
function readUnknown(r: WireReader): { apiVersion: string; kind: string; raw: Buffer } {
  let apiVersion = '';
  let kind = '';
  let raw: Buffer = Buffer.alloc(0);
  while (!r.done()) {
    const { field, wire } = r.key();
    if (wire === WIRE_END_GROUP) throw new WireError('proto: Unknown: wiretype end group for non-group');
    if (field <= 0) throw new WireError(`proto: Unknown: illegal tag ${field} (wire type ${wire})`);
    if (field >= 1 && field <= 4) {
      const names = ['TypeMeta', 'Raw', 'ContentEncoding', 'ContentType'];
      if (wire !== WIRE_BYTES) throw new WireError(`proto: wrong wireType = ${wire} for field ${names[field - 1]}`);
      const { start, end } = r.bytes();
      if (field === 2) raw = r.buf.subarray(start, end);
      if (field === 1) {
        const t = new WireReader(r.buf, start, end);
        while (!t.done()) {
          const k = t.key();
          if (k.wire === WIRE_END_GROUP) throw new WireError('proto: TypeMeta: wiretype end group for non-group');
          if (k.field <= 0) throw new WireError(`proto: TypeMeta: illegal tag ${k.field} (wire type ${k.wire})`);
          if (k.field === 1 || k.field === 2) {
            if (k.wire !== WIRE_BYTES)
              throw new WireError(`proto: wrong wireType = ${k.wire} for field ${k.field === 1 ? 'APIVersion' : 'Kind'}`);
            const b = t.bytes();
            const s = t.buf.toString('utf8', b.start, b.end);
            if (k.field === 1) apiVersion = s;
            else kind = s;
          } else t.skip(k.wire);
        }
      }
    } else r.skip(wire);
  }
  return { apiVersion, kind, raw };
}

/** One message's JSON value; `depth` bounds recursion. */
function decodeMessage(messages: Message[], index: number, r: WireReader, depth: number): unknown {
  if (depth > MAX_MESSAGE_DEPTH) throw new WireError(`proto: message nested deeper than ${MAX_MESSAGE_DEPTH}`);
  const m = messages[index]!;
  const short = m.name.slice(m.name.lastIndexOf('.') + 1);
  // Values per field number: scalars as read (last wins), messages as their byte ranges (merged), lists appended.
  const scalars = new Map<number, unknown>();
  const parts = new Map<number, Buffer[]>();
  const lists = new Map<number, unknown[]>();
  const maps = new Map<number, Map<string, unknown>>();
  while (!r.done()) {
    const { field, wire } = r.key();
    if (wire === WIRE_END_GROUP) throw new WireError(`proto: ${short}: wiretype end group for non-group`);
    if (field <= 0) throw new WireError(`proto: ${short}: illegal tag ${field} (wire type ${wire})`);
    const f = m.byNumber.get(field);
    if (f === undefined) {
      r.skip(wire);
      continue;
    }
    const [, jsonName, type, flags = ''] = f;
    const goName = jsonName.charAt(0).toUpperCase() + jsonName.slice(1);
    if (flags.includes('m')) {
      if (wire !== WIRE_BYTES) throw new WireError(`proto: wrong wireType = ${wire} for field ${goName}`);
      const { start, end } = r.bytes();
      const [k, v] = mapEntry(messages, type, new WireReader(r.buf, start, end), depth, goName);
      let entries = maps.get(field);
      if (entries === undefined) maps.set(field, (entries = new Map()));
      entries.set(k, v);
      continue;
    }
    if (typeof type === 'number') {
      if (wire !== WIRE_BYTES) throw new WireError(`proto: wrong wireType = ${wire} for field ${goName}`);
      const { start, end } = r.bytes();
      const bytes = r.buf.subarray(start, end);
      if (flags.includes('r')) {
        let list = lists.get(field);
        if (list === undefined) lists.set(field, (list = []));
        list.push(decodeMessage(messages, type, new WireReader(bytes), depth + 1));
      } else {
        // Two occurrences of one message field merge, and so does decoding their concatenation.
        let p = parts.get(field);
        if (p === undefined) parts.set(field, (p = []));
        p.push(bytes);
      }
      continue;
    }
    if (flags.includes('r')) {
      let list = lists.get(field);
      if (list === undefined) lists.set(field, (list = []));
      if (wire === WIRE_BYTES && type !== 'string' && type !== 'bytes') {
        // A packed run of numbers.
        const { start, end } = r.bytes();
        const run = new WireReader(r.buf, start, end);
        while (!run.done()) list.push(scalar(run, type, wireOf(type), goName));
      } else list.push(scalar(r, type, wire, goName));
      continue;
    }
    scalars.set(field, scalar(r, type, wire, goName));
  }
  if (m.special !== undefined && m.special !== 'list') return special(m.special, scalars);
  if (m.special === 'list') return lists.get(1) ?? [];
  const out: Record<string, unknown> = {};
  for (const f of [...m.byNumber.values()]) {
    const [field, jsonName, type, flags = ''] = f;
    let value: unknown;
    if (flags.includes('m')) {
      const entries = maps.get(field);
      if (entries === undefined) continue;
      const obj: Record<string, unknown> = {};
      for (const [k, v] of entries) setOwn(obj, k, v);
      value = obj;
    } else if (flags.includes('r')) {
      value = lists.get(field);
      if (value === undefined) continue;
    } else if (typeof type === 'number') {
      const p = parts.get(field);
      if (p === undefined) continue;
      value = decodeMessage(messages, type, new WireReader(p.length === 1 ? p[0]! : Buffer.concat(p)), depth + 1);
      if (value === undefined) continue;
      if (flags.includes('i') && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const [k, v] of Object.entries(value)) setOwn(out, k, v);
        continue;
      }
    } else {
      if (!scalars.has(field)) continue;
      value = scalars.get(field);
      // Go's omitempty: a non-pointer field's zero value is not written (a pointer's is: it was set).
      if (!flags.includes('p') && (value === '' || value === 0 || value === false)) continue;
    }
    setOwn(out, jsonName, value);
  }
  return out;
}

/** One `map<string, V>` entry (key 1, value 2). */
function mapEntry(messages: Message[], type: string | number, r: WireReader, depth: number, goName: string): [string, unknown] {
  let key = '';
  let value: unknown = typeof type === 'number' ? undefined : zero(type);
  const parts: Buffer[] = [];
  while (!r.done()) {
    const { field, wire } = r.key();
    if (wire === WIRE_END_GROUP) throw new WireError('proto: wiretype end group for non-group');
    if (field === 1) {
      if (wire !== WIRE_BYTES) throw new WireError(`proto: wrong wireType = ${wire} for field ${goName}`);
      const b = r.bytes();
      key = r.buf.toString('utf8', b.start, b.end);
    } else if (field === 2) {
      if (typeof type === 'number') {
        if (wire !== WIRE_BYTES) throw new WireError(`proto: wrong wireType = ${wire} for field ${goName}`);
        const b = r.bytes();
        parts.push(r.buf.subarray(b.start, b.end));
      } else value = scalar(r, type, wire, goName);
    } else r.skip(wire);
  }
  if (typeof type === 'number')
    value = decodeMessage(messages, type, new WireReader(parts.length === 1 ? parts[0]! : Buffer.concat(parts)), depth + 1);
  return [key, value ?? null];
}

function zero(type: string): unknown {
  return type === 'string' || type === 'bytes' ? '' : type === 'bool' ? false : 0;
}

/** The wire type a scalar type is written with. */
function wireOf(type: string): number {
  if (type === 'double' || type === 'fixed64' || type === 'sfixed64') return WIRE_FIXED64;
  if (type === 'float' || type === 'fixed32' || type === 'sfixed32') return WIRE_FIXED32;
  if (type === 'string' || type === 'bytes') return WIRE_BYTES;
  return WIRE_VARINT;
}

/** One scalar value in its JSON form (bytes as base64, as Go's encoding/json writes []byte). */
function scalar(r: WireReader, type: string, wire: number, goName: string): unknown {
  if (wire !== wireOf(type)) throw new WireError(`proto: wrong wireType = ${wire} for field ${goName}`);
  switch (type) {
    case 'string': {
      const b = r.bytes();
      return r.buf.toString('utf8', b.start, b.end);
    }
    case 'bytes': {
      const b = r.bytes();
      return r.buf.toString('base64', b.start, b.end);
    }
    case 'bool':
      return r.varint() !== 0n;
    case 'int32':
      return Number(BigInt.asIntN(32, r.varint()));
    case 'uint32':
      return Number(BigInt.asUintN(32, r.varint()));
    case 'int64':
      return Number(BigInt.asIntN(64, r.varint()));
    case 'uint64':
      return Number(r.varint());
    case 'sint32':
    case 'sint64': {
      const v = r.varint();
      return Number((v >> 1n) ^ -(v & 1n));
    }
    case 'fixed32':
      return r.fixed32();
    case 'sfixed32':
      return r.fixed32() | 0;
    case 'fixed64':
      return Number(r.fixed64());
    case 'sfixed64':
      return Number(BigInt.asIntN(64, r.fixed64()));
    case 'double': {
      const v = r.fixed64();
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(v);
      return b.readDoubleLE(0);
    }
    case 'float': {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(r.fixed32());
      return b.readFloatLE(0);
    }
    default:
      throw new WireError(`proto: unsupported type ${type}`);
  }
}

/** The JSON form of the types that marshal themselves. `undefined`: leave the field out. */
function special(kind: Special, scalars: Map<number, unknown>): unknown {
  switch (kind) {
    case 'time':
    case 'microtime': {
      const seconds = (scalars.get(1) as number | undefined) ?? 0;
      const nanos = (scalars.get(2) as number | undefined) ?? 0;
      // A zero Time marshals to null (omitted here): gogo writes the non-pointer field even when unset.
      if (seconds === 0 && nanos === 0) return undefined;
      return formatTime(seconds, nanos, kind === 'microtime');
    }
    case 'duration':
      return formatDuration(BigInt((scalars.get(1) as number | undefined) ?? 0));
    case 'quantity':
      return (scalars.get(1) as string | undefined) ?? '';
    case 'intorstring':
      return scalars.get(1) === 1
        ? ((scalars.get(3) as string | undefined) ?? '')
        : ((scalars.get(2) as number | undefined) ?? 0);
    case 'raw': {
      const raw = scalars.get(1) as string | undefined;
      if (raw === undefined) return undefined;
      const text = Buffer.from(raw, 'base64').toString('utf8');
      if (text === '') return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new WireError(`raw is not JSON: ${text.slice(0, 30)}`);
      }
    }
    default:
      return undefined;
  }
}

/** RFC 3339 in UTC, seconds (Time) or microseconds (MicroTime), as metav1 marshals them. */
function formatTime(seconds: number, nanos: number, micro: boolean): string {
  const d = new Date(seconds * 1000);
  if (Number.isNaN(d.getTime())) throw new WireError(`Time out of range: ${seconds}`);
  const iso = d.toISOString().slice(0, 19);
  if (!micro) return `${iso}Z`;
  return `${iso}.${String(Math.floor(Math.max(0, nanos) / 1000) % 1_000_000).padStart(6, '0')}Z`;
}

/** Go's `time.Duration.String()`: `1h2m3.5s`, `150ms`, `0s`. */
export function formatDuration(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    const [unit, div] = u < 1_000n ? ['ns', 1n] : u < 1_000_000n ? ['µs', 1_000n] : ['ms', 1_000_000n];
    out = `${fraction(u, div)}${unit}`;
  } else {
    const h = u / 3_600_000_000_000n;
    u %= 3_600_000_000_000n;
    const m = u / 60_000_000_000n;
    u %= 60_000_000_000n;
    out = `${fraction(u, 1_000_000_000n)}s`;
    if (h > 0n) out = `${h}h${m}m${out}`;
    else if (m > 0n) out = `${m}m${out}`;
  }
  return neg ? `-${out}` : out;
}

/** `v / div` with the fraction's trailing zeros dropped. */
function fraction(v: bigint, div: bigint): string {
  const whole = v / div;
  const rest = v % div;
  if (rest === 0n) return String(whole);
  const digits = String(div).length - 1;
  return `${whole}.${String(rest).padStart(digits, '0').replace(/0+$/, '')}`;
}

#!/usr/bin/env node
/**
 * Generates src/http/proto/schema.generated.ts — the compact message table the embedded apiserver
 * decodes `application/vnd.kubernetes.protobuf` request bodies with — from the published Kubernetes
 * `.proto` definitions (k8s.io/api and k8s.io/apimachinery, `generated.proto`) in the Go module cache,
 * plus the Go struct tags beside them (what the `.proto` files cannot say: which fields are Go
 * pointers, whose zero value is still sent, and which are embedded structs inlined in JSON).
 *
 *   node packages/testing/scripts/gen-proto-schema.mjs            # writes the file
 *   node packages/testing/scripts/gen-proto-schema.mjs --stdout   # prints it (the test compares)
 *
 * The module cache is `GOMODCACHE`, else `$GOPATH/pkg/mod`, else `~/go/pkg/mod`; the modules are
 * fetched there by `go mod download k8s.io/api@<v> k8s.io/apimachinery@<v>` when missing.
 * The output depends only on the pinned versions and the roots below: it is reproducible.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The published line the table is generated from (the newest pinned Kubernetes line's staging tag). */
export const STAGING_VERSION = 'v0.37.2';

/**
 * The API packages whose kinds a client may send as protobuf to the embedded apiserver: the groups
 * it serves or that tests register as stand-ins (core, apps, batch, coordination, events, policy).
 * Their imports (meta/v1, runtime, intstr, resource, …) are followed, so the table is closed.
 */
const ROOTS = [
  'k8s.io/api/core/v1',
  'k8s.io/api/apps/v1',
  'k8s.io/api/batch/v1',
  'k8s.io/api/coordination/v1',
  'k8s.io/api/events/v1',
  'k8s.io/api/policy/v1',
];

const SCALARS = new Set([
  'string',
  'bool',
  'bytes',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'double',
  'float',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
]);

export function moduleCache() {
  if (process.env.GOMODCACHE) return process.env.GOMODCACHE;
  if (process.env.GOPATH) return join(process.env.GOPATH.split(':')[0], 'pkg', 'mod');
  return join(homedir(), 'go', 'pkg', 'mod');
}

/** `k8s.io/api/core/v1` → its directory in the module cache at the pinned version. */
function dirOf(cache, importPath) {
  const m = /^(k8s\.io\/(?:api|apimachinery))\/(.*)$/.exec(importPath);
  if (m === null) throw new Error(`not a k8s.io/api or apimachinery package: ${importPath}`);
  return join(cache, `${m[1]}@${STAGING_VERSION}`, m[2]);
}

/** The cache holds both pinned modules. */
export function cachePresent(cache = moduleCache()) {
  return existsSync(dirOf(cache, 'k8s.io/api/core/v1')) && existsSync(dirOf(cache, 'k8s.io/apimachinery/pkg/apis/meta/v1'));
}

/** Messages of one generated.proto: name → fields, with its package and imports. Comments are dropped first. */
function parseProto(text) {
  const src = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const pkg = /^\s*package\s+([\w.]+)\s*;/m.exec(src)?.[1];
  if (pkg === undefined) throw new Error('no package');
  const imports = [...src.matchAll(/^\s*import\s+"([^"]+)\/generated\.proto"\s*;/gm)].map((m) => m[1]);
  const messages = new Map();
  const re = /\bmessage\s+(\w+)\s*\{([^{}]*)\}/g;
  for (const m of src.matchAll(re)) {
    const fields = [];
    for (const line of m[2].split(';')) {
      const t = line.trim();
      if (t === '') continue;
      let f = /^(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)$/.exec(t);
      if (f !== null) {
        fields.push({ label: f[1], type: f[2], name: f[3], num: Number(f[4]) });
        continue;
      }
      f = /^map\s*<\s*string\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)$/.exec(t);
      if (f !== null) {
        fields.push({ label: 'map', type: f[1], name: f[2], num: Number(f[3]) });
        continue;
      }
      throw new Error(`${pkg}.${m[1]}: unparsed field: ${t}`);
    }
    messages.set(m[1], fields);
  }
  // Nested messages, enums or oneofs would be dropped silently by the pattern above: refuse them.
  if (/\b(enum|oneof)\s+\w+\s*\{/.test(src)) throw new Error(`${pkg}: enum/oneof not supported`);
  return { pkg, imports, messages };
}

/**
 * From the Go sources of a package: per struct, per protobuf field number, the JSON name, whether the
 * Go field is a pointer (a zero value is then meaningful) and whether it is an embedded struct that
 * JSON inlines (`json:",inline"` or `json:""`) while protobuf nests it.
 */
function parseGoTags(dir) {
  const out = new Map();
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.go') || file.endsWith('_test.go') || file.startsWith('zz_generated') || file.endsWith('.pb.go'))
      continue;
    const src = readFileSync(join(dir, file), 'utf8');
    for (const s of src.matchAll(/^type\s+(\w+)\s+struct\s*\{([\s\S]*?)^\}/gm)) {
      const fields = new Map();
      for (const line of s[2].split('\n')) {
        const f = /^\s*(?:(\w+)\s+)?(\*?[\w.[\]*]+)\s+`([^`]*)`/.exec(line);
        if (f === null) continue;
        const tag = f[3];
        const pb = /protobuf:"[^"]*?,(\d+),[^"]*"/.exec(tag);
        if (pb === null) continue;
        const json = /json:"([^"]*)"/.exec(tag)?.[1] ?? '';
        const jsonName = json.split(',')[0];
        fields.set(Number(pb[1]), {
          jsonName: jsonName === '-' ? undefined : jsonName,
          pointer: f[2].startsWith('*'),
          inline: f[1] === undefined && jsonName === '',
        });
      }
      out.set(s[1], fields);
    }
  }
  return out;
}

/** Reads every package reachable from ROOTS; returns the table's JSON-able form. */
export function buildSchema(cache = moduleCache()) {
  const packages = new Map(); // proto package → { importPath, messages, tags, group, version }
  const queue = [...ROOTS];
  const seen = new Set();
  while (queue.length > 0) {
    const ip = queue.shift();
    if (seen.has(ip)) continue;
    seen.add(ip);
    const dir = dirOf(cache, ip);
    const parsed = parseProto(readFileSync(join(dir, 'generated.proto'), 'utf8'));
    queue.push(...parsed.imports);
    let group;
    if (ip.startsWith('k8s.io/api/')) {
      const reg = existsSync(join(dir, 'register.go')) ? readFileSync(join(dir, 'register.go'), 'utf8') : '';
      group = /GroupName\s*=\s*"([^"]*)"/.exec(reg)?.[1];
      if (group === undefined) throw new Error(`${ip}: no GroupName`);
    }
    packages.set(parsed.pkg, {
      importPath: ip,
      messages: parsed.messages,
      tags: parseGoTags(dir),
      group,
      version: ip.split('/').pop(),
    });
  }
  const names = [];
  for (const [pkg, p] of [...packages].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    for (const name of [...p.messages.keys()].sort()) names.push(`${pkg}.${name}`);
  const index = new Map(names.map((n, i) => [n, i]));
  const messages = [];
  for (const full of names) {
    const pkg = full.slice(0, full.lastIndexOf('.'));
    const name = full.slice(pkg.length + 1);
    const p = packages.get(pkg);
    const tags = p.tags.get(name);
    const fields = [];
    for (const f of [...p.messages.get(name)].sort((a, b) => a.num - b.num)) {
      let type;
      if (SCALARS.has(f.type)) type = f.type;
      else {
        const ref = f.type.startsWith('.') ? f.type.slice(1) : f.type.includes('.') ? f.type : `${pkg}.${f.type}`;
        const i = index.get(ref);
        if (i === undefined) throw new Error(`${full}.${f.name}: unknown type ${f.type}`);
        type = i;
      }
      const tag = tags?.get(f.num);
      let flags = f.label === 'repeated' ? 'r' : f.label === 'map' ? 'm' : '';
      if (tag?.pointer) flags += 'p';
      if (tag?.inline) flags += 'i';
      const jsonName = tag?.jsonName !== undefined && tag.jsonName !== '' ? tag.jsonName : f.name;
      fields.push(flags === '' ? [f.num, jsonName, type] : [f.num, jsonName, type, flags]);
    }
    messages.push([full, fields]);
  }
  const groups = {};
  for (const [pkg, p] of [...packages].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (p.group === undefined) continue;
    groups[p.group === '' ? p.version : `${p.group}/${p.version}`] = pkg;
  }
  return { groups, messages };
}

/** The generated file's text. */
export function render(schema) {
  const lines = [];
  lines.push('// Generated by packages/testing/scripts/gen-proto-schema.mjs from the generated.proto files of');
  lines.push(`// k8s.io/api@${STAGING_VERSION} and k8s.io/apimachinery@${STAGING_VERSION} (Apache-2.0). Do not edit.`);
  lines.push('');
  lines.push(`/** The module version the table was generated from. */`);
  lines.push(`export const PROTO_SCHEMA_VERSION = '${STAGING_VERSION}';`);
  lines.push('');
  lines.push('/** An API group/version (`v1`, `apps/v1`) → its protobuf package. */');
  lines.push(`export const PROTO_GROUPS: Readonly<Record<string, string>> = ${JSON.stringify(schema.groups)};`);
  lines.push('');
  lines.push('/**');
  lines.push(' * Every message: [full name, fields]; a field is [number, JSON name, scalar type or message index, flags?]');
  lines.push(" * with flags 'r' repeated, 'm' map<string, type>, 'p' Go pointer (a zero value is sent on purpose),");
  lines.push(" * 'i' an embedded struct that JSON inlines into its parent.");
  lines.push(' */');
  lines.push(
    'export const PROTO_MESSAGES: ReadonlyArray<readonly [string, ReadonlyArray<readonly [number, string, string | number, string?]>]> = [',
  );
  for (const m of schema.messages) lines.push(`  ${JSON.stringify(m)},`);
  lines.push('];');
  lines.push('');
  return lines.join('\n');
}

export const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'http', 'proto', 'schema.generated.ts');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const cache = moduleCache();
  if (!cachePresent(cache)) {
    console.error(
      `k8s.io/api@${STAGING_VERSION} or k8s.io/apimachinery@${STAGING_VERSION} is not in ${cache};\n` +
        `fetch them with: go mod download k8s.io/api@${STAGING_VERSION} k8s.io/apimachinery@${STAGING_VERSION}`,
    );
    process.exit(1);
  }
  const text = render(buildSchema(cache));
  if (process.argv.includes('--stdout')) process.stdout.write(text);
  else {
    writeFileSync(OUTPUT, text);
    console.log(`wrote ${OUTPUT} (${text.length} bytes)`);
  }
}

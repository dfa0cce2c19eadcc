#!/usr/bin/env node
/**
 * `reconcile-loop-apiserver`: runs the embedded apiserver as a process until SIGINT/SIGTERM.
 * Prints the URL as the first stdout line; everything else goes to stderr.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setOwn } from './engine/json-safe.js';
import { nameErrors } from './engine/meta.js';
import { readManifests, UsageError } from './cli-files.js';
import type { ResourceDefinition } from './kinds/resource.js';
import type { ApiServerObject } from './types.js';
import { labelKeyError, labelValueError } from './selectors.js';
import { startApiServer, type ApiServer } from './server.js';

const USAGE = `Usage: reconcile-loop-apiserver [options]

Serves a loopback Kubernetes API until SIGINT/SIGTERM: pods (with binding, eviction and status),
namespaces, ConfigMaps, Secrets, Services, Events (core and events.k8s.io), Leases,
CustomResourceDefinitions and the custom kinds they or --resource define, plus discovery,
/version and the OpenAPI v3 documents kubectl reads.

Options:
  --port N            TCP port (default 0: an ephemeral port)
  --host ADDR         listen address (default 127.0.0.1)
  --kubeconfig PATH   write a kubeconfig for the server to PATH
  --token TOKEN       require this bearer token (default: accept any or none)
  --seed-pods N       create N pods at start (named pod-0 .. pod-N-1)
  --namespace NS      namespace of seeded pods (default "default")
  --labels k=v,...    labels of seeded pods
  --node NAME         bind seeded pods to this node
  --resource G/V/Kind/plural
                      serve a custom resource kind (repeatable), e.g. example.com/v1/Widget/widgets
  --crd FILE          create the CustomResourceDefinition(s) in FILE (JSON; repeatable) and serve their kinds
  --seed FILE         create the objects in FILE (JSON object, array or List; repeatable), after the CRDs
  --personality P     cached (default, a watch-cached apiserver) or uncached (--watch-cache=false)
  --feature-gates G=B,...
                      kube-apiserver's gates this server models: ShardedListAndWatch (default true:
                      shardSelector is served) and WatchList (default true), e.g. ShardedListAndWatch=false
  -h, --help          show this help
`;

function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (text.trim() === '') return out;
  for (const pair of text.split(',')) {
    const i = pair.indexOf('=');
    if (i <= 0) throw new UsageError(`--labels: expected k=v, got ${JSON.stringify(pair)}`);
    const k = pair.slice(0, i).trim();
    const v = pair.slice(i + 1).trim();
    const ke = labelKeyError(k);
    if (ke !== undefined) throw new UsageError(`--labels: invalid key ${JSON.stringify(k)}: ${ke}`);
    const ve = labelValueError(v);
    if (ve !== undefined) throw new UsageError(`--labels: invalid value ${JSON.stringify(v)}: ${ve}`);
    setOwn(out, k, v);
  }
  return out;
}

/** The gates `--feature-gates` may set: `Name=true|false`, comma-separated, as kube-apiserver reads them. */
export function parseFeatureGates(text: string): { ShardedListAndWatch?: boolean; WatchList?: boolean } {
  const out: { ShardedListAndWatch?: boolean; WatchList?: boolean } = {};
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue;
    const i = pair.indexOf('=');
    if (i <= 0) throw new UsageError(`--feature-gates: missing bool value for ${pair.trim()}`);
    const k = pair.slice(0, i).trim();
    const v = pair
      .slice(i + 1)
      .trim()
      .toLowerCase();
    if (k !== 'ShardedListAndWatch' && k !== 'WatchList')
      throw new UsageError(`--feature-gates: unrecognized feature gate: ${k}`);
    if (v !== 'true' && v !== 'false')
      throw new UsageError(`--feature-gates: invalid value of ${k}=${v}, err: expected true or false`);
    out[k] = v === 'true';
  }
  return out;
}

/** `group/version/Kind/plural` as `--resource` takes it. */
export function parseResourceFlag(text: string): ResourceDefinition {
  const parts = text.split('/');
  if (parts.length !== 4 || parts.some((p) => p === '')) {
    throw new UsageError(`--resource: expected group/version/Kind/plural, got ${JSON.stringify(text)}`);
  }
  const [group, version, kind, plural] = parts as [string, string, string, string];
  if (nameErrors(group, 'subdomain').length > 0 || !group.includes('.'))
    throw new UsageError(`--resource: invalid group ${JSON.stringify(group)} (a DNS subdomain with a dot, e.g. example.com)`);
  if (!/^v\d+((alpha|beta)\d+)?$/.test(version))
    throw new UsageError(`--resource: invalid version ${JSON.stringify(version)} (e.g. v1, v1beta1)`);
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind))
    throw new UsageError(`--resource: invalid kind ${JSON.stringify(kind)} (CamelCase, e.g. Widget)`);
  if (nameErrors(plural, 'label').length > 0)
    throw new UsageError(`--resource: invalid plural ${JSON.stringify(plural)} (lowercase, e.g. widgets)`);
  return { group, version, kind, plural };
}

function int(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text)) throw new UsageError(`--${name}: expected a non-negative integer, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** Parses `argv`, starts the server and wires signals. Resolves with the server once listening. */
export async function main(
  argv: string[],
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<ApiServer | undefined> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      kubeconfig: { type: 'string' },
      token: { type: 'string' },
      'seed-pods': { type: 'string' },
      namespace: { type: 'string' },
      labels: { type: 'string' },
      node: { type: 'string' },
      resource: { type: 'string', multiple: true },
      crd: { type: 'string', multiple: true },
      seed: { type: 'string', multiple: true },
      personality: { type: 'string' },
      'feature-gates': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help === true) {
    out.write(USAGE);
    return undefined;
  }
  const port = int('port', values.port, 0);
  const podCount = int('seed-pods', values['seed-pods'], 0);
  const labels = parseLabels(values.labels ?? '');
  const resources = (values.resource ?? []).map(parseResourceFlag);
  const personality = values.personality ?? 'cached';
  if (personality !== 'cached' && personality !== 'uncached')
    throw new UsageError(`--personality: expected cached or uncached, got ${JSON.stringify(personality)}`);
  const gates = parseFeatureGates(values['feature-gates'] ?? '');
  const crds: ApiServerObject[] = [];
  for (const f of values.crd ?? []) crds.push(...(await readManifests('--crd', f)));
  const notCrd = crds.find((o) => o.kind !== 'CustomResourceDefinition');
  if (notCrd !== undefined)
    throw new UsageError(`--crd: ${String(notCrd.kind)} ${String(notCrd.metadata.name)} is not a CustomResourceDefinition`);
  const seeds: ApiServerObject[] = [];
  for (const f of values.seed ?? []) seeds.push(...(await readManifests('--seed', f)));
  const server = await startApiServer({
    port,
    host: values.host,
    token: values.token,
    personality,
    shardedListAndWatch: gates.ShardedListAndWatch,
    watchList: gates.WatchList,
  });
  try {
    for (const def of resources) server.registerResource(def);
  } catch (e) {
    await server.close();
    throw new UsageError(`--resource: ${(e as Error).message}`);
  }
  try {
    await server.load([...crds, ...seeds]);
  } catch (e) {
    await server.close();
    throw new UsageError(`--crd/--seed: ${(e as Error).message}`);
  }
  if (podCount > 0) {
    server.seedPods(podCount, {
      namespace: values.namespace ?? 'default',
      labels,
      nodeName: values.node,
    });
  }
  if (values.kubeconfig !== undefined) await server.writeKubeconfig(values.kubeconfig);
  out.write(`${server.url}\n`);
  err.write(`reconcile-loop-apiserver listening on ${server.url}\n`);
  if (values.kubeconfig !== undefined) err.write(`kubeconfig written to ${values.kubeconfig}\n`);
  for (const def of resources) err.write(`serving ${def.plural}.${def.group}/${def.version} (${def.kind})\n`);
  if (crds.length > 0) err.write(`established ${crds.length} CRD(s): ${crds.map((c) => c.metadata.name).join(', ')}\n`);
  if (seeds.length > 0) err.write(`created ${seeds.length} object(s) from --seed\n`);
  if (podCount > 0) err.write(`seeded ${podCount} pod(s) in namespace ${values.namespace ?? 'default'}\n`);
  return server;
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

/**
 * Runs the command as a process: wires SIGINT/SIGTERM, exits 0 after `--help` or a clean stop, 2 on
 * a usage error, 1 on any other failure. The package's bin calls this; it must not depend on which
 * file `argv[1]` names (the bin is a shim outside dist/, so an entry-point check there never matches).
 */
export function runCli(argv: string[] = process.argv.slice(2)): void {
  // Signal handlers go in before the server starts, so a signal right after the URL is printed is never fatal.
  let started: Promise<ApiServer | undefined> = Promise.resolve(undefined);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`received ${signal}, shutting down\n`);
    started
      .then((server) => server?.close())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  started = main(argv);
  started.then(
    (server) => {
      if (server === undefined) process.exit(0);
    },
    (e: unknown) => {
      // util.parseArgs reports a bad command line with Node's own ERR_PARSE_ARGS_* codes.
      const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
      const usage =
        e instanceof UsageError ||
        code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ||
        code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ||
        code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL';
      process.stderr.write(`reconcile-loop-apiserver: ${e instanceof Error ? e.message : String(e)}\n`);
      if (usage) process.stderr.write(USAGE);
      process.exit(usage ? 2 : 1);
    },
  );
}

if (isEntryPoint()) runCli();

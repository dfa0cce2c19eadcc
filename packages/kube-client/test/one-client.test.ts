import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Issue 13's two structural promises, checked over the repository's sources rather than trusted:
// nothing but kube-client talks HTTP to an apiserver, and only kube-client has client-node as a
// peer. The embedded apiserver (packages/testing) is the server side, so it may use node:http.

const root = join(import.meta.dirname, '..', '..', '..');

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|cts|js|mjs)$/.test(name) ? [path] : [];
  });
}

/** Every way a source file could reach an apiserver on its own. */
const HTTP_USES: readonly [string, RegExp][] = [
  // A probe or metrics server (createServer) is fine; a request is not.
  [
    'sends an HTTP request (http.request/get, or request/get/Agent imported from node:http/https)',
    /\bhttps?\.(?:request|get)\s*\(|import\s*\{[^}]*\b(?:request|get|Agent)\b[^}]*\}\s*from\s*['"](?:node:)?https?['"]|import\(\s*['"](?:node:)?https?['"]\s*\)(?!\s*\.\s*(?!then\b|catch\b|finally\b)[A-Za-z_$])/,
  ],
  ['calls fetch', /(?<![.\w])fetch\s*\(/],
  ['uses undici', /['"]undici['"]/],
  [
    'uses a client-node API class (makeApiClient, *Api, Watch, Informer)',
    /makeApiClient|\b(?:CoreV1Api|CustomObjectsApi|AppsV1Api|EventsV1Api|CoordinationV1Api|ApiextensionsV1Api|KubernetesObjectApi)\b|new\s+(?:Watch|ListWatch)\s*\(|makeInformer/,
  ],
];

const packagesDir = join(root, 'packages');
const packageNames = readdirSync(packagesDir).filter((name) => existsSync(join(packagesDir, name, 'package.json')));
const examplesDir = join(root, 'examples');
const exampleNames = existsSync(examplesDir)
  ? readdirSync(examplesDir).filter((name) => existsSync(join(examplesDir, name, 'package.json')))
  : [];

describe('[kube_client: one HTTP client] nothing else talks HTTP to the apiserver; only kube-client has client-node as a peer', () => {
  it('no package source (but kube-client, and the embedded apiserver that is the server) nor example source opens HTTP or uses a client-node API class', () => {
    const offenders: string[] = [];
    const scanned: string[] = [];
    const dirs = [
      ...packageNames
        .filter((name) => name !== 'kube-client' && name !== 'testing')
        .map((name) => join(packagesDir, name, 'src')),
      ...exampleNames.map((name) => join(examplesDir, name, 'src')),
    ];
    for (const file of dirs.flatMap(sources)) {
      scanned.push(file);
      const text = readFileSync(file, 'utf8');
      for (const [what, pattern] of HTTP_USES) if (pattern.test(text)) offenders.push(`${relative(root, file)} ${what}`);
    }
    expect(offenders).toEqual([]);
    // the scan saw the packages that do talk to a cluster, through kube-client
    expect(scanned.some((f) => f.includes(join('reflector', 'src')))).toBe(true);
    expect(scanned.some((f) => f.includes(join('leader-election', 'src')))).toBe(true);
  });

  it('the patterns catch what they are for (so a clean scan means something)', () => {
    const hits = (text: string) => HTTP_USES.filter(([, pattern]) => pattern.test(text)).map(([what]) => what);
    expect(hits("import { request } from 'node:https';")).toHaveLength(1);
    expect(hits("import http from 'node:http';\nhttp.get(url);")).toHaveLength(1);
    expect(hits("const https = await import('https');")).toHaveLength(1);
    expect(hits("import { createServer, type Server } from 'node:http';")).toEqual([]);
    // `import('node:http').X` is a type (a Promise has no such member); `.then(...)` loads it at run time.
    expect(hits("type Handler = (req: import('node:http').IncomingMessage) => void;")).toEqual([]);
    expect(hits("import('node:http').then((http) => http.get(url));")).toHaveLength(1);
    expect(hits('const r = await fetch(url);')).toHaveLength(1);
    expect(hits('const core = kc.makeApiClient(CoreV1Api);')).toHaveLength(1);
    expect(hits('// a node:http request handler, no import\nconst prefetch = x.prefetch(1);')).toEqual([]);
  });

  it('kube-client is the only package with @kubernetes/client-node as a peer or dependency; the reflector and leader election reach it through kube-client', () => {
    const carriers = packageNames.filter((name) => {
      const manifest = JSON.parse(readFileSync(join(packagesDir, name, 'package.json'), 'utf8')) as Record<
        string,
        Record<string, string> | undefined
      >;
      return ['dependencies', 'peerDependencies', 'optionalDependencies'].some(
        (field) => manifest[field]?.['@kubernetes/client-node'] !== undefined,
      );
    });
    expect(carriers).toEqual(['kube-client']);
    for (const name of ['reflector', 'leader-election']) {
      const manifest = JSON.parse(readFileSync(join(packagesDir, name, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      expect(manifest.dependencies?.['@reconcile-loop/kube-client'], name).toBeDefined();
    }
  });
});

/**
 * Runs the conformance cases against pairs of servers (embedded vs real, per personality) and
 * renders the SAME/DIFF report. A case marked as a known difference that turns out SAME is
 * reported so the mark can go; an unmarked DIFF is a failure.
 */
import { isDeepStrictEqual } from 'node:util';
import { startApiServer, type ApiServer } from '../src/index.js';
import type { ConformanceCase, Personality } from './case.js';
import { CASES } from './cases.js';
import { Target, type Access } from './target.js';

/** One case's outcome on one personality. */
export interface CaseResult {
  id: string;
  title: string;
  personality: Personality;
  verdict: 'SAME' | 'DIFF';
  knownDifference: string | undefined;
  /** Reported, never asserted: the real server's answer depends on timing. */
  nondeterministic: string | undefined;
  embedded: unknown;
  real: unknown;
}

/** A real server and the embedded one configured as its personality. */
export interface Pair {
  personality: Personality;
  embedded: Target;
  real: Target;
}

/** The token the embedded targets require (anonymous requests are then 403, as on the real one). */
export const EMBEDDED_TOKEN = 'conformance-token';

/**
 * Starts the embedded server as a conformance target: the real deletion events, the given
 * personality, a token, and kube-apiserver's default gates (ShardedListAndWatch off) unless
 * `gates` says otherwise (the sharded cases pair it with a server started with the gate on).
 */
export async function embeddedTarget(
  personality: Personality,
  gates: { shardedListAndWatch?: boolean } = {},
): Promise<{ server: ApiServer; target: Target }> {
  const server = await startApiServer({
    personality,
    deletionEvents: 'graceful',
    token: EMBEDDED_TOKEN,
    shardedListAndWatch: gates.shardedListAndWatch ?? false,
  });
  return { server, target: realTarget(`embedded (${personality})`, { server: server.url, token: EMBEDDED_TOKEN }) };
}

/**
 * One personality's pair: an embedded server started in it (the caller closes `server`) against the
 * real kube-apiserver at `access`.
 */
export async function pairAgainst(personality: Personality, access: Access): Promise<{ pair: Pair; server: ApiServer }> {
  const { server, target } = await embeddedTarget(personality);
  return { server, pair: { personality, embedded: target, real: realTarget(`kube-apiserver (${personality})`, access) } };
}

/** A server as a target; binding goes through the pods/binding subresource, as the scheduler's does. */
export function realTarget(name: string, access: Access): Target {
  const t: Target = new Target(name, access, async (ns, pod, node) => {
    const a = await t.request('POST', `/api/v1/namespaces/${ns}/pods/${pod}/binding`, {
      body: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod },
        target: { apiVersion: 'v1', kind: 'Node', name: node },
      },
    });
    if (a.status !== 201) throw new Error(`binding ${ns}/${pod}: ${a.status} ${a.text}`);
  });
  return t;
}

/** Runs every case on every pair, each in a fresh namespace of the same name on both servers. */
export async function runConformance(
  pairs: Pair[],
  cases: ConformanceCase[] = CASES,
  onResult?: (r: CaseResult) => void,
): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  const run = Date.now().toString(36);
  for (const pair of pairs) {
    for (const c of cases) {
      if (c.personalities !== undefined && !c.personalities.includes(pair.personality)) continue;
      const ns = `conf-${run}-${pair.personality.slice(0, 1)}-${c.id}`.slice(0, 63).replace(/-+$/, '');
      const observe = async (t: Target): Promise<unknown> => {
        try {
          await t.namespace(ns);
          return await c.run(t, ns);
        } catch (e) {
          return { threw: (e as Error).message };
        }
      };
      const [embedded, real] = await Promise.all([observe(pair.embedded), observe(pair.real)]);
      const r: CaseResult = {
        id: c.id,
        title: c.title,
        personality: pair.personality,
        verdict: isDeepStrictEqual(embedded, real) ? 'SAME' : 'DIFF',
        knownDifference: c.knownDifferenceOn?.[pair.personality] ?? c.knownDifference,
        nondeterministic: c.nondeterministic,
        embedded,
        real,
      };
      out.push(r);
      onResult?.(r);
    }
  }
  return out;
}

/** One report line: verdict, personality, id, title, and the reason of a known difference. */
export function reportLine(r: CaseResult): string {
  if (r.nondeterministic !== undefined)
    return `${r.verdict}  ${r.personality.padEnd(8)}  ${r.id.padEnd(30)}  ${r.title}  (not asserted: ${r.nondeterministic})`;
  const mark =
    r.knownDifference === undefined
      ? ''
      : r.verdict === 'DIFF'
        ? `  (known difference: ${r.knownDifference})`
        : '  (marked as a known difference but SAME: remove the mark)';
  return `${r.verdict}  ${r.personality.padEnd(8)}  ${r.id.padEnd(30)}  ${r.title}${mark}`;
}

/** The full report, with the observations of every unexpected DIFF. */
export function report(results: CaseResult[]): string {
  const lines = results.map(reportLine);
  const unexpected = results.filter(
    (r) => r.verdict === 'DIFF' && r.knownDifference === undefined && r.nondeterministic === undefined,
  );
  for (const r of unexpected) {
    lines.push(
      '',
      `DIFF ${r.personality} ${r.id}:`,
      `  embedded: ${JSON.stringify(r.embedded)}`,
      `  real:     ${JSON.stringify(r.real)}`,
    );
  }
  const same = results.filter((r) => r.verdict === 'SAME').length;
  lines.push(
    '',
    `${same} SAME, ${results.length - same} DIFF (${results.filter((r) => r.verdict === 'DIFF' && r.knownDifference !== undefined).length} known), ${unexpected.length} unexpected`,
  );
  return lines.join('\n');
}

/** True when the results hold no unexpected DIFF and no stale known-difference mark. */
export function conforms(results: CaseResult[]): boolean {
  return results.every((r) => r.nondeterministic !== undefined || (r.verdict === 'SAME') === (r.knownDifference === undefined));
}

/**
 * `./dev demo --shards N`: the CellSet controller scaled out, narrated. The embedded apiserver runs
 * in this process; the controller runs as separate replica processes (shard-replica.ts), each the
 * controller of src/ with a `ShardMember` on a Lease of its own as its shard gate, so the kill -9
 * and the SIGSTOP below are real signals to real processes. The story:
 *
 * 1. twelve CellSets; N replicas join one after the other, each taking about 1/N of them;
 * 2. the last joins right after every CellSet was edited, while the others rebuild the pods: the
 *    CellSets it takes wait until their previous owner has acknowledged the new ring;
 * 3. the replica with most CellSets is killed with kill -9 right after an edit: its CellSets move
 *    to the others once its Lease has expired by their clocks;
 * 4. a new replica joins in its place;
 * 5. another is frozen (SIGSTOP) past its Lease while its CellSets are edited: the others take them
 *    over; resumed (SIGCONT), it admits nothing before it has renewed its Lease and re-read the ring,
 *    and then takes its share back;
 * 6. a last edit, every replica stops gracefully, and the replicas' own records are checked: no
 *    CellSet was reconciled by two replicas at once (overlaps.ts), every CellSet converged.
 *
 * Real time throughout; every wait has a deadline and names what did not happen.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '@reconcile-loop/kube-client';
import { inShardRanges, shardHash, type ShardRange } from '@reconcile-loop/primitives';
import { startApiServer, type ApiServer } from '@reconcile-loop/testing';
import { API_VERSION, CELLSET_LABEL, GROUP, KIND, PLURAL, TEMPLATE_HASH_ANNOTATION, VERSION, templateHash } from '../src/api.js';
import type { CellSet } from '../src/api.js';
import { ensureCellSetCrd } from './install.js';
import { startKubelet } from './kubelet.js';
import { findOverlaps, intervalsOf, type AdmissionEvent, type Interval } from './overlaps.js';
import { ENV, RING, SHARD_TIMINGS } from './shard-config.js';

/** The namespace of the story: its CellSets, their pods and the ring's Leases. */
export const SHARDS_NAMESPACE = 'cells';
/** CellSets in the story: about 12/N for each replica. */
export const DEFAULT_CELLSETS = 12;
/** The replica counts `--shards` takes: one replica needs no ring; more than 8 processes swamp a laptop. */
export const MIN_SHARDS = 2;
export const MAX_SHARDS = 8;
const ref = { group: GROUP, version: VERSION, plural: PLURAL };

/** Options of {@link runShards}. */
export interface ShardsOptions {
  /** Replicas after the joins (the story peaks at this many, and ends with this many). */
  readonly shards: number;
  readonly print: (line: string) => void;
  readonly printError?: ((line: string) => void) | undefined;
  /** Default {@link DEFAULT_CELLSETS}. */
  readonly cellSets?: number | undefined;
  /** Upper bound of every wait in the story. Default 45 s (a replica's first start compiles the sources). */
  readonly stepTimeoutMs?: number | undefined;
  /** Also print the replicas' warnings and errors. */
  readonly verbose?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** What the story ended with (its tests read it). */
export interface ShardsReport {
  /** Admissions (reconcile calls) checked for overlaps, over every replica. */
  readonly reconciles: number;
  /** Pairs of one CellSet's intervals from two replicas that shared an instant: empty, or the demo failed. */
  readonly overlaps: readonly string[];
  /** CellSets converged at the end (observed generation, every pod Ready and on the current template). */
  readonly converged: number;
  readonly cellSets: number;
  /** CellSets reconciled by more than one replica over the story: the keys that moved. */
  readonly moved: number;
  /** The replicas in the order they joined; the one killed; the one paused. */
  readonly joined: readonly string[];
  readonly killed: string;
  readonly paused: string;
}

/** A line a replica printed (shard-replica.ts's header lists them). */
interface Line {
  readonly e: string;
  readonly t: number;
  readonly [field: string]: unknown;
}
type MemberLine = Line & { holds: boolean; pending: boolean; members: string[]; acknowledged: string[] };

/** One replica process: its lines as they arrive, and what was done to it. */
class Replica {
  readonly lines: Line[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  joinedAt: number | undefined;
  /** When kill -9 was seen to end it (it ran no code after). */
  killedAt: number | undefined;
  frozen: { from: number; to: number | undefined } | undefined;
  terminated = false;
  /** Set before the story signals it to end (kill -9, SIGTERM): any other exit fails the story. */
  endExpected = false;
  /** Its last view's CellSets; set by the narration. */
  keys: string[] = [];
  lettingGo = false;

  constructor(
    readonly name: string,
    env: Record<string, string>,
    onLine: (replica: Replica, line: Line) => void,
    onStderr: (line: string) => void,
  ) {
    // Under tsx (`./dev demo`) the replica is a .ts file run the same way; in the built entry
    // (`node dist/main.js`, tsup.config.ts) it is dist/shard-replica.js beside it.
    const here = fileURLToPath(import.meta.url);
    const args = here.endsWith('.ts')
      ? ['--conditions=@reconcile-loop/source', '--import', 'tsx', join(dirname(here), 'shard-replica.ts')]
      : [join(dirname(here), 'shard-replica.js')];
    this.child = spawn(process.execPath, args, {
      cwd: join(dirname(here), '..'),
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    eachLine(this.child.stdout!, (text) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        onStderr(`[${this.name}] ${text}`);
        return;
      }
      this.lines.push(line);
      onLine(this, line);
    });
    eachLine(this.child.stderr!, (text) => onStderr(`[${this.name}] ${text}`));
  }

  join(): void {
    this.joinedAt = Date.now();
    this.child.stdin!.write('join\n');
  }

  /** Joined, not killed, not frozen, not stopping, still running. */
  get live(): boolean {
    return (
      this.joinedAt !== undefined &&
      this.killedAt === undefined &&
      (this.frozen === undefined || this.frozen.to !== undefined) &&
      !this.terminated &&
      this.ended === undefined
    );
  }

  /** How the process ended, if it did. */
  get ended(): string | undefined {
    const { exitCode, signalCode } = this.child;
    return exitCode === null && signalCode === null ? undefined : signalCode === null ? `exit code ${exitCode}` : signalCode;
  }

  last<L extends Line>(e: string, after = 0): L | undefined {
    for (let i = this.lines.length - 1; i >= 0; i--) {
      const line = this.lines[i]!;
      if (line.t < after) return undefined;
      if (line.e === e) return line as L;
    }
    return undefined;
  }

  first(e: string, after = 0, test: (line: Line) => boolean = () => true): Line | undefined {
    return this.lines.find((x) => x.e === e && x.t >= after && test(x));
  }

  /** Admissions still open (entered, not released). */
  get inFlight(): number {
    let n = 0;
    for (const x of this.lines) n += x.e === 'enter' ? 1 : x.e === 'release' ? -1 : 0;
    return n;
  }
}

/** Calls `onLine` with every whole line of `stream` (a partial line waits for its newline). */
function eachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop()!;
    for (const part of parts) if (part !== '') onLine(part);
  });
}

/** Pods per CellSet. */
const PODS = 2;

function cellSetBody(name: string, image: number) {
  const spec = { restartPolicy: 'Never', containers: [{ name: 'engine', image: `cells/engine:${image}` }] };
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace: SHARDS_NAMESPACE },
    spec: { replicas: PODS, template: { metadata: { labels: { app: 'engine' } }, spec } },
  };
}

/** Plays the story; resolves with its report once every replica has stopped. Rejects when a wait runs out. */
export async function runShards(options: ShardsOptions): Promise<ShardsReport> {
  const { shards, print } = options;
  const printError = options.printError ?? print;
  const count = options.cellSets ?? DEFAULT_CELLSETS;
  const timeoutMs = options.stepTimeoutMs ?? 45_000;
  const started = Date.now();
  const stamp = (t = Date.now()): string => `[${((t - started) / 1000).toFixed(1).padStart(5)}s]`;
  const say = (line: string): void => print(`${stamp()} ~ ${line}`);
  const tell = (who: string, line: string, t?: number): void => print(`${stamp(t)}   ${who}: ${line}`);
  const ns = SHARDS_NAMESPACE;
  const names = Array.from({ length: count }, (_, i) => `cell-${String(i).padStart(2, '0')}`);
  const replicas: Replica[] = [];
  const hashes = new Map<string, string>(); // CellSet name → shardHash(uid)
  const byHash = new Map<string, string>();
  const keysIn = (ranges: readonly ShardRange[]): string[] => names.filter((n) => inShardRanges(hashes.get(n)!, ranges));
  const list = (keys: readonly string[]): string => (keys.length === 0 ? 'none' : keys.join(' '));
  /** The owners of the last settled ring: who a key came from. */
  let owners = new Map<string, string>();

  /** Every replica's admissions so far, as intervals (a killed replica's open one ends when its exit was seen). */
  const admissions = (): Interval[] =>
    replicas.flatMap((r) =>
      intervalsOf(
        r.name,
        r.lines.filter((x): x is Line & AdmissionEvent => x.e === 'enter' || x.e === 'release'),
        (h) => byHash.get(h),
        r.killedAt,
      ),
    );

  const server: ApiServer = await startApiServer({ implicitNamespaces: true });
  let stopKubelet = (): void => {};
  const unexpected: string[] = [];
  try {
    server.createNamespace(ns);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(server.kubeconfig());
    const client = new KubeClient({ kubeConfig });
    say(`embedded apiserver at ${server.url}; the CellSet controller runs as separate replica processes, one Lease each`);
    await ensureCellSetCrd(client, ns);
    stopKubelet = startKubelet({ server, namespace: ns, finishDeleteMs: 100 }).stop;
    for (const name of names) {
      const created = server.createObject(ref, cellSetBody(name, 1)) as { metadata: { uid: string } };
      hashes.set(name, shardHash(created.metadata.uid));
      byHash.set(shardHash(created.metadata.uid), name);
    }
    say(
      `kubectl apply: ${count} CellSets (${names[0]} … ${names.at(-1)}), ${PODS} pods each; a replica owns a CellSet by the hash of its uid on a ring of Leases (lease ${SHARD_TIMINGS.leaseDurationMs / 1000} s, renew deadline ${SHARD_TIMINGS.renewDeadlineMs / 1000} s, retry ${SHARD_TIMINGS.retryPeriodMs / 1000} s)`,
    );

    const until = async <V>(what: string, probe: () => V | undefined): Promise<V> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        options.signal?.throwIfAborted();
        if (unexpected.length > 0) throw new Error(`the story stalled: ${unexpected.join('; ')}`);
        const value = probe();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`the story stalled: ${what} did not happen within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

    const narrate = (r: Replica, x: Line): void => {
      if (x.e === 'ranges') {
        const now = keysIn(x['ranges'] as ShardRange[]);
        const gained = now.filter((k) => !r.keys.includes(k));
        const lost = r.keys.filter((k) => !now.includes(k));
        r.keys = now;
        r.lettingGo ||= lost.length > 0;
        const from = [...new Set(gained.map((k) => owners.get(k)).filter((o) => o !== undefined && o !== r.name))];
        const parts = [
          gained.length > 0 ? `takes ${list(gained)}${from.length > 0 ? ` (from ${from.join(', ')})` : ''}` : '',
          lost.length > 0 ? `lets go of ${list(lost)}` : '',
        ].filter(Boolean);
        const members = x['members'] as string[];
        const dead = members.filter((m) => replicas.find((o) => o.name === m)?.killedAt !== undefined);
        const why =
          dead.length === 0
            ? ''
            : ` (${dead.join(', ')}: killed, but its Lease is still there; new to the ring, ${r.name} counts it until the Lease has looked unchanged for ${SHARD_TIMINGS.leaseDurationMs / 1000} s by its own clock)`;
        const share = parts.join('; ') || 'no change to its share';
        tell(r.name, `sees ring [${members.join(', ')}]: ${share}; watches ${now.length}${why}`, x.t);
      } else if (x.e === 'handover') {
        const gained = keysIn(x['gained'] as ShardRange[]);
        const waited = (x['waitedFor'] as string[]).join(', ') || 'nothing';
        const expired = x['expired'] as string[];
        const why = expired.length > 0 ? `; ${expired.join(', ')} left by Lease expiry` : '';
        tell(
          r.name,
          `admits ${list(gained)} from now on: handover took ${((x['waitedMs'] as number) / 1000).toFixed(1)} s (waited for ${waited}${why})`,
          x.t,
        );
      } else if (x.e === 'ack' && r.lettingGo) {
        r.lettingGo = false;
        tell(r.name, 'acknowledged the new ring in its Lease: nothing it let go of is in flight, the new owners may start', x.t);
      } else if (x.e === 'log' && options.verbose) {
        tell(r.name, `${String(x['level'])} ${String(x['message'])}`, x.t);
      }
    };
    let next = 0;
    const spawnReplica = (): Replica => {
      const name = `replica-${next++}`;
      const r = new Replica(
        name,
        { [ENV.kubeconfig]: server.kubeconfig(), [ENV.identity]: name, [ENV.namespace]: ns },
        narrate,
        printError,
      );
      r.child.once('exit', (code, signal) => {
        if (!r.endExpected) unexpected.push(`${name} exited on its own (${signal ?? `code ${code}`})`);
      });
      replicas.push(r);
      return r;
    };
    const live = (): Replica[] => replicas.filter((r) => r.live);

    /** Every live replica sees the same ring of the live replicas, has acknowledged it, has no handover pending, and caches exactly its share. */
    const settled = (): Replica[] | undefined => {
      const current = live();
      const ids = JSON.stringify(current.map((r) => r.name).sort());
      const same = (members: readonly string[]): boolean => JSON.stringify([...members].sort()) === ids;
      for (const r of current) {
        const m = r.last<MemberLine>('member');
        if (m === undefined || !m.holds || m.pending) return undefined;
        if (!same(m.members) || !same(m.acknowledged)) return undefined;
        const cache = r.last('cache');
        if (cache?.['cellSets'] !== r.keys.length || cache['pods'] !== r.keys.length * PODS) return undefined;
      }
      const owned = current.flatMap((r) => r.keys);
      return owned.length === count && new Set(owned).size === count ? current : undefined;
    };
    const showRing = async (what: string): Promise<void> => {
      const ring = await until(`${what}: the ring settled`, settled);
      owners = new Map(ring.flatMap((r) => r.keys.map((k) => [k, r.name] as const)));
      say(
        `the ring settled (${what}): ${ring.length} replica${ring.length === 1 ? '' : 's'}, each CellSet owned by exactly one, each cache holding only its share`,
      );
      const width = Math.max(...ring.map((r) => list(r.keys).length));
      for (const r of ring) {
        const cache = r.last('cache')!;
        const owns = `${String(r.keys.length).padStart(2)} ${r.keys.length === 1 ? 'CellSet ' : 'CellSets'}  ${list(r.keys).padEnd(width)}`;
        print(
          `          ${r.name.padEnd(10)} ${owns}  cache: ${String(cache['cellSets'])} CellSet${cache['cellSets'] === 1 ? '' : 's'}, ${String(cache['pods'])} pods`,
        );
      }
    };

    const converged = (name: string): boolean => {
      const set = server.getObject(ref, ns, name) as unknown as (CellSet & { status?: Record<string, unknown> }) | undefined;
      if (set === undefined) return false;
      const status = (set.status ?? {}) as { observedGeneration?: number; readyReplicas?: number };
      if (status.observedGeneration !== set.metadata.generation || status.readyReplicas !== set.spec.replicas) return false;
      const hash = templateHash(set);
      const pods = server.listPods(ns).filter((p) => p.metadata.labels?.[CELLSET_LABEL] === name);
      return (
        pods.length === set.spec.replicas &&
        pods.every(
          (p) =>
            p.metadata.deletionTimestamp === undefined &&
            p.metadata.annotations?.[TEMPLATE_HASH_ANNOTATION] === hash &&
            p.status?.phase === 'Running',
        )
      );
    };
    const allConverged = (what: string): Promise<true> =>
      until(`${what}: every CellSet converged`, () => (names.every(converged) ? true : undefined));
    let image = 1;
    const edit = (keys: readonly string[]): void => {
      image += 1;
      for (const name of keys)
        server.updateObject(ref, ns, name, (o) => {
          (o['spec'] as { template: { spec: { containers: Array<{ image: string }> } } }).template.spec.containers[0]!.image =
            `cells/engine:${image}`;
        });
    };
    /** Who reconciled which CellSets since `since`, in one line. */
    const reconciledSince = (since: number): string =>
      replicas
        .map((r) => {
          const keys = [
            ...new Set(r.lines.filter((x) => x.e === 'enter' && x.t >= since).map((x) => byHash.get(x['h'] as string)!)),
          ];
          return keys.length === 0 ? '' : `${r.name} ${list(keys.sort())}`;
        })
        .filter(Boolean)
        .join(' · ');

    // 1. The replicas join one after the other. Started together first: loading the sources is the slow part.
    //    The last one joins right after an edit of every CellSet, while the others rebuild their pods: a
    //    CellSet it takes waits until its previous owner's reconciles of it have finished.
    const pool = Array.from({ length: shards }, () => spawnReplica());
    await until('the replica processes loaded', () => (pool.every((r) => r.first('loaded')) ? true : undefined));
    let since = 0;
    for (const [i, r] of pool.entries()) {
      if (i === shards - 1) {
        since = Date.now();
        say(`kubectl edit, every CellSet: image cells/engine:${image + 1} (every pod drifts and is rebuilt)`);
        edit(names);
      }
      const at = Date.now();
      const busy = i === shards - 1 ? ', while the others rebuild their pods' : '';
      say(
        `${r.name} joins${busy} (a process of its own, pid ${r.child.pid}): it takes a Lease ${RING}-${r.name} and reads the ring`,
      );
      r.join();
      await until(`${r.name} synced`, () => r.first('synced', at));
      if (i === 0) await allConverged(`${r.name} alone`);
      await showRing(`${r.name} joined`);
      if (i === 0) say(`${r.name} alone reconciled all ${count}: ${count * PODS} pods Running`);
    }
    await allConverged('the first edit');
    say(`every CellSet converged; reconciled since the edit by: ${reconciledSince(since)}`);

    // 3. kill -9 the replica with most CellSets, right after an edit of every CellSet.
    const victim = live().sort((a, b) => b.keys.length - a.keys.length)[0]!;
    since = Date.now();
    say(
      `kubectl edit, every CellSet: image cells/engine:${image + 1}; ${victim.name} is killed (kill -9) as soon as it starts on its share`,
    );
    edit(names);
    await until(`${victim.name} reconciling`, () => victim.first('enter', since));
    victim.endExpected = true;
    victim.child.kill('SIGKILL');
    await until(`${victim.name} gone after kill -9`, () => (victim.ended === undefined ? undefined : true));
    victim.killedAt = Date.now();
    const replacement = spawnReplica(); // loads while the Lease runs out
    say(
      `kill -9 ${victim.name} (${victim.inFlight} reconcile${victim.inFlight === 1 ? '' : 's'} in flight): no goodbye, its Lease stays until it expires (${SHARD_TIMINGS.leaseDurationMs / 1000} s after its last renewal, by each survivor's clock); ${list(victim.keys)} wait`,
    );
    await allConverged(`after kill -9 ${victim.name}`);
    await showRing(`${victim.name} killed`);
    say(`every CellSet converged; reconciled since the edit by: ${reconciledSince(since)}`);

    // 4. A new replica joins in its place (as a Deployment would start one).
    await until(`${replacement.name} loaded`, () => replacement.first('loaded'));
    say(`${replacement.name} joins in its place (as a Deployment would start one)`);
    const joinedAt = Date.now();
    replacement.join();
    await until(`${replacement.name} synced`, () => replacement.first('synced', joinedAt));
    await showRing(`${replacement.name} joined`);

    // 5. SIGSTOP a replica past its Lease, outside a reconcile: a process frozen in the middle of one
    //    resumes that call after others may own the key (a Lease is not a fencing token: the write's
    //    resourceVersion precondition is what protects that case), which the check would report.
    let sleeper: Replica | undefined;
    for (let attempt = 0; attempt < 5 && sleeper === undefined; attempt++) {
      const candidate = live()
        .filter((r) => r !== replacement)
        .sort((a, b) => b.keys.length - a.keys.length)[0]!;
      await until(`${candidate.name} idle`, () => (candidate.inFlight === 0 ? true : undefined));
      candidate.child.kill('SIGSTOP');
      candidate.frozen = { from: Date.now(), to: undefined };
      await pause(200); // a line written before the freeze has been read by now (stdout is a pipe, written synchronously)
      if (candidate.inFlight === 0) sleeper = candidate;
      else {
        candidate.child.kill('SIGCONT'); // caught in a reconcile: let it finish well within its Lease, try again
        candidate.frozen = undefined;
      }
    }
    if (sleeper?.frozen === undefined)
      throw new Error('the story stalled: no replica could be frozen outside a reconcile in 5 attempts');
    const frozen = sleeper.frozen;
    const itsKeys = sleeper.keys;
    since = Date.now();
    say(
      `kill -STOP ${sleeper.name}: frozen, it renews nothing; kubectl edit ${list(itsKeys)} (its share): image cells/engine:${image + 1}`,
    );
    edit(itsKeys);
    await allConverged(`while ${sleeper.name} is frozen`);
    await showRing(`${sleeper.name} frozen`);
    say(`its CellSets converged without it; reconciled by: ${reconciledSince(since)}`);
    await pause(Math.max(0, frozen.from + SHARD_TIMINGS.leaseDurationMs + 1_000 - Date.now()));
    // Read before the signal: every line the replica writes after waking carries a later time.
    const resumed = Date.now();
    sleeper.child.kill('SIGCONT');
    frozen.to = resumed;
    sleeper.lettingGo = false;
    say(
      `kill -CONT ${sleeper.name} after ${((frozen.to - frozen.from) / 1000).toFixed(1)} s frozen: its Lease is long past its renew deadline`,
    );
    const woke = sleeper;
    await showRing(`${woke.name} resumed`);

    // 6. A last edit of every CellSet: the resumed replica reconciles its share again.
    since = Date.now();
    say(`kubectl edit, every CellSet: image cells/engine:${image + 1}`);
    edit(names);
    await allConverged('the last edit');
    say(`every CellSet converged; reconciled by: ${reconciledSince(since)}`);
    // A real check of "nothing before the re-read": the member's new term starts once a renewal
    // succeeded, and it admits only after a LIST of the ring sent after that; so its first admission
    // after waking must follow the first answered LIST sent after the first renewal answered after waking.
    const lapsed = woke.first('member', resumed, (x) => !(x as MemberLine).holds);
    const renewed = woke.first('lease-write', resumed, (x) => (x['sent'] as number) >= resumed);
    const reRead = renewed && woke.first('ring-read', renewed.t, (x) => (x['sent'] as number) >= renewed.t);
    const firstEnter = woke.first('enter', resumed);
    if (firstEnter !== undefined && (reRead === undefined || firstEnter.t < reRead.t))
      throw new Error(
        `${woke.name} admitted ${byHash.get(firstEnter['h'] as string)} ${firstEnter.t - resumed} ms after waking, before a LIST of the ring sent after its renewal was answered`,
      );
    const after = (x: Line | undefined): string => (x === undefined ? 'never' : `+${((x.t - resumed) / 1000).toFixed(2)} s`);
    say(
      `${woke.name} after waking: saw its Lease lapsed ${after(lapsed)}, renewed it ${after(renewed)}, re-read the ring ${after(reRead)}, first admission ${after(firstEnter)}: nothing before the re-read`,
    );
    const running = live();
    say(`SIGTERM ${running.map((r) => r.name).join(', ')}: each drains its reconciles and releases its Lease`);
    for (const r of running) {
      r.terminated = r.endExpected = true;
      r.child.kill('SIGTERM');
    }
    await until('the replicas exited', () => (running.every((r) => r.ended !== undefined) ? true : undefined));
    for (const r of running) {
      const lines = (r.last('metrics')?.['lines'] as string[] | undefined) ?? [];
      const value = (name: string) =>
        lines
          .find((l) => l.startsWith(name))
          ?.split(' ')
          .at(-1) ?? '?';
      tell(
        r.name,
        `exited ${r.first('exit') ? 'after releasing its Lease' : `(${r.ended})`}; /metrics: reconcile_loop_shard_handovers_total ${value('reconcile_loop_shard_handovers_total')}, reconcile_loop_shard_members_expired_total ${value('reconcile_loop_shard_members_expired_total')}`,
      );
    }

    // The check, from the replicas' own records.
    const intervals = admissions();
    const overlaps = findOverlaps(intervals);
    const reconcilers = new Map<string, Set<string>>();
    for (const x of intervals) reconcilers.set(x.key, (reconcilers.get(x.key) ?? new Set()).add(x.replica));
    const moved = [...reconcilers.values()].filter((s) => s.size > 1).length;
    const done = names.filter(converged).length;
    for (const o of overlaps) printError(`overlap: ${o}`);
    const logged = replicas.reduce((n, r) => n + r.lines.filter((x) => x.e === 'log').length, 0);
    if (logged > 0 && !options.verbose)
      say(
        `the replicas logged ${logged} warning${logged === 1 ? '' : 's'} or error${logged === 1 ? '' : 's'}: --verbose prints them`,
      );
    say(
      overlaps.length === 0
        ? `no CellSet was reconciled by two replicas at once (${intervals.length} reconciles checked, from the replicas' own records on one machine clock); ${moved} of ${count} CellSets moved between replicas`
        : `${overlaps.length} times a CellSet was reconciled by two replicas at once (${intervals.length} reconciles checked)`,
    );
    return {
      reconciles: intervals.length,
      overlaps,
      converged: done,
      cellSets: count,
      moved,
      joined: replicas.filter((r) => r.joinedAt !== undefined).map((r) => r.name),
      killed: victim.name,
      paused: woke.name,
    };
  } catch (error) {
    // A story that stalled still reports what the records hold so far.
    for (const o of findOverlaps(admissions())) printError(`overlap (before it stopped): ${o}`);
    throw error;
  } finally {
    for (const r of replicas) {
      r.endExpected = true;
      if (r.ended !== undefined) continue;
      if (r.frozen !== undefined && r.frozen.to === undefined) r.child.kill('SIGCONT');
      r.child.kill('SIGKILL');
    }
    await Promise.race([Promise.all(replicas.map((r) => r.exited)), new Promise((resolve) => setTimeout(resolve, 5_000))]);
    stopKubelet();
    await server.close();
  }
}

/** A custom resource ("CocoonSet") that owns pods, over in-process sources and the fake clock. */
import { ManualClock, type BackoffPolicy } from '@reconcile-loop/primitives';
import { recordingLogger } from '@reconcile-loop/test-support';
import {
  InProcessSource,
  ReconcileLoop,
  type ObjectKey,
  type ReconcileContext,
  type ReconcileLoopOptions,
  type ReconcileResult,
} from '../src/index.js';

export interface Meta {
  name: string;
  namespace: string;
  generation?: number;
  resourceVersion?: string;
  uid?: string;
  ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
}
export interface CocoonSet {
  metadata: Meta;
  spec: { replicas: number };
}
export interface Pod {
  metadata: Meta;
  phase?: string;
}

export const NS = 'ns';
export const setOf = (
  name: string,
  replicas: number,
  generation = 1,
  resourceVersion = `${generation}`,
): [ObjectKey, CocoonSet] => [
  `${NS}/${name}`,
  { metadata: { name, namespace: NS, generation, resourceVersion }, spec: { replicas } },
];
export const podOf = (
  name: string,
  owner: string | undefined,
  extra: Partial<Meta> & { phase?: string } = {},
): [ObjectKey, Pod] => {
  const { phase, ...meta } = extra;
  return [
    `${NS}/${name}`,
    {
      metadata: {
        name,
        namespace: NS,
        resourceVersion: '1',
        ...(owner !== undefined && {
          ownerReferences: [
            { apiVersion: 'example.com/v1', kind: 'CocoonSet', name: owner, uid: `uid-${owner}`, controller: true },
          ],
        }),
        ...meta,
      },
      ...(phase !== undefined && { phase }),
    },
  ];
};

export interface Seen {
  key: string;
  at: number;
  parent: number | undefined;
  pods: string[];
}

export type Sec = { pods: Pod };
export type Body = (
  key: string,
  ctx: ReconcileContext<CocoonSet, string, Sec>,
) => void | ReconcileResult | Promise<void | ReconcileResult>;

/** One loop: primary `sets`, secondary `pods` owned by controller reference. Not started. */
export function controllerHarness(
  options: Partial<ReconcileLoopOptions<CocoonSet, string, Sec>> & {
    body?: Body;
    sets?: Array<[ObjectKey, CocoonSet]>;
    pods?: Array<[ObjectKey, Pod]>;
    podOptions?: Partial<NonNullable<ReconcileLoopOptions<CocoonSet, string, Sec>['secondary']>['pods']>;
    /** Both in-process sources' reopen backoff (`InProcessSource`'s `retry`). */
    sourceRetry?: BackoffPolicy;
  } = {},
) {
  const clock = new ManualClock();
  const logger = recordingLogger();
  const retry = options.sourceRetry;
  const sets = new InProcessSource<CocoonSet>('cocoonsets', options.sets ?? [], { retry });
  const pods = new InProcessSource<Pod>('pods', options.pods ?? [], { retry });
  const seen: Seen[] = [];
  const { body, sets: _s, pods: _p, podOptions, sourceRetry: _r, ...rest } = options;
  const loop = new ReconcileLoop<CocoonSet, string, Sec>({
    source: sets,
    keyMap: (_, key) => key,
    secondary: {
      pods:
        podOptions?.keyMap === undefined
          ? { source: pods, owner: { kind: 'CocoonSet', apiVersion: 'example.com/v1' }, ...podOptions }
          : { source: pods, ...podOptions },
    },
    reconcile: async (key, ctx) => {
      seen.push({ key, at: clock.now(), parent: ctx.parent?.spec.replicas, pods: [...ctx.owned('pods').keys()].sort() });
      return await body?.(key, ctx);
    },
    clock,
    logger,
    ...rest,
  });
  const keys = (): string[] => seen.map((s) => s.key);
  return { clock, logger, sets, pods, seen, loop, keys };
}

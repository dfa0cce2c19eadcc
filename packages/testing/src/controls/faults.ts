import { OptionsError } from '@reconcile-loop/primitives';
import type { ResourceType } from '../kinds/resource.js';
import type { FailNextOptions, InjectedStatus, ApiServerVerb } from '../options.js';
import {
  EXPIRED_LIST_MESSAGE,
  badRequest,
  expired,
  failure,
  internalError,
  pathNotFound,
  tooLargeResourceVersion,
  tooManyRequests,
  tooOldWatch,
  unauthorized,
  type KubeStatus,
} from '../status.js';

const INJECTABLE: ReadonlySet<unknown> = new Set<InjectedStatus>([400, 401, 403, 404, 410, 422, 429, 500, 504, 'hang']);

/** One queued failure. */
export interface QueuedFailure {
  verb: ApiServerVerb;
  status: InjectedStatus;
  inBand: boolean;
  retryAfterSeconds: number;
}

/**
 * The queue behind {@link ApiServer.failNext}: failures fire in the order queued, each for the
 * first request of its verb that arrives, before any other processing of that request.
 */
export class FaultQueue {
  readonly #queue: QueuedFailure[] = [];

  /** Queues `times` failures of one verb; bad options throw OptionsError and queue nothing. */
  add(o: FailNextOptions): void {
    const times = o.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new OptionsError('ApiServer', 'failNext: times must be a positive integer');
    if (!INJECTABLE.has(o.status)) throw new OptionsError('ApiServer', `failNext: unsupported status ${String(o.status)}`);
    const retryAfterSeconds = o.retryAfterSeconds ?? 1;
    if (!Number.isInteger(retryAfterSeconds) || retryAfterSeconds < 0)
      throw new OptionsError('ApiServer', 'failNext: retryAfterSeconds must be an integer >= 0');
    for (let i = 0; i < times; i++) {
      this.#queue.push({
        verb: o.verb,
        status: o.status,
        inBand: o.inBand === true && o.verb === 'watch' && o.status !== 'hang',
        retryAfterSeconds,
      });
    }
  }

  /** Forgets every queued failure. */
  clear(): void {
    this.#queue.length = 0;
  }

  /** Removes and returns the first failure queued for `verb`. */
  take(verb: ApiServerVerb): QueuedFailure | undefined {
    const i = this.#queue.findIndex((f) => f.verb === verb);
    return i < 0 ? undefined : this.#queue.splice(i, 1)[0];
  }
}

/** The Status the real server sends for an injected status, worded for the request's resource and resourceVersion. */
export function injectedStatus(
  status: Exclude<InjectedStatus, 'hang'>,
  verb: ApiServerVerb,
  requestedRv: string,
  retryAfterSeconds: number,
  r: ResourceType,
  revision: { current: number; compacted: number },
): KubeStatus {
  const qualified = r.group === '' ? r.plural : `${r.plural}.${r.group}`;
  switch (status) {
    case 400:
      return badRequest('injected failure: the server rejected the request');
    case 401:
      return unauthorized();
    case 403:
      return failure(
        403,
        'Forbidden',
        `${qualified} is forbidden: User "system:serviceaccount:default:injected" cannot ${verb} resource "${r.plural}" in API group "${r.group}"`,
        {
          kind: r.plural,
          ...(r.group === '' ? {} : { group: r.group }),
        },
      );
    case 404:
      return pathNotFound();
    case 422:
      return failure(422, 'Invalid', 'injected failure: the request is invalid', {});
    case 500:
      return internalError('injected failure');
    case 429:
      return tooManyRequests(retryAfterSeconds);
    case 410: {
      if (verb === 'watch') {
        const n = /^\d+$/.test(requestedRv) ? Number(requestedRv) : 0;
        return tooOldWatch(n, revision.compacted);
      }
      return expired(EXPIRED_LIST_MESSAGE);
    }
    case 504: {
      const n = /^\d+$/.test(requestedRv) ? Number(requestedRv) : revision.current + 1;
      return tooLargeResourceVersion(Math.max(n, revision.current + 1), revision.current, retryAfterSeconds);
    }
  }
}

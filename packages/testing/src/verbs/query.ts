/** Query-parameter handling shared by the read verbs: selectors, resourceVersion, Table options and list bodies. */
import type { IncomingMessage } from 'node:http';
import { ApiStatusError } from '../errors.js';
import type { ResourceType } from '../kinds/resource.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelRequirement } from '../selectors.js';
import { badRequest, invalid, tooLargeResourceVersion, type FieldError, type KubeStatus } from '../status.js';
import type { IncludeObject } from '../table.js';
import type { KubeObject } from '../types.js';
import type { ServerContext } from './context.js';

/** 422 on `ListOptions.meta.k8s.io`, as the apiserver words misused list options. */
export function listInvalid(errs: FieldError[]): KubeStatus {
  return invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);
}

/** `includeObject` for Tables (default Metadata). */
export function includeObject(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject');
  if (v === 'None' || v === 'Object' || v === 'Metadata') return v;
  if (v === null || v === '') return 'Metadata';
  throw new ApiStatusError(badRequest(`includeObject must be one of None, Metadata, Object: ${v}`));
}

/** Parsed `labelSelector` and `fieldSelector` (the field set is the kind's). */
export function selectors(r: ResourceType, q: URLSearchParams): { labels: LabelRequirement[]; fields: FieldRequirement[] } {
  return {
    labels: parseLabelSelector(q.get('labelSelector') ?? ''),
    fields: parseFieldSelector(q.get('fieldSelector') ?? '', r.supportedFields, (f) => r.unknownFieldMessage(f)),
  };
}

/** True when `o` passes both selectors. */
export function selected(r: ResourceType, o: KubeObject, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
  if (!matchesLabels(labels, o.metadata.labels)) return false;
  return fields.length === 0 || matchesFields(fields, r.fieldSet(o));
}

/** A decimal resourceVersion, or 400. */
export function parseRv(rv: string): number {
  if (!/^\d+$/.test(rv)) throw new ApiStatusError(badRequest(`invalid resource version: ${JSON.stringify(rv)}`));
  return Number(rv);
}

/** Waits for a future revision as the watch cache does, then answers 504 "Too large resource version". */
export async function awaitRevision(ctx: ServerContext, n: number, req: IncomingMessage): Promise<void> {
  if (n <= ctx.store.revision) return;
  const ac = new AbortController();
  ctx.inflight.add(ac);
  const onClose = (): void => ac.abort();
  req.on('close', onClose);
  try {
    const ok = await ctx.store.waitForRevision(n, ctx.opts.tooLargeResourceVersionWaitMs, ac.signal);
    if (!ok) throw new ApiStatusError(tooLargeResourceVersion(n, ctx.store.revision, 1));
  } finally {
    req.off('close', onClose);
    ctx.inflight.delete(ac);
  }
}

/** A `<Kind>List` body; built-in list items drop kind/apiVersion as the typed lists do. */
export function listBody(r: ResourceType, items: KubeObject[], rv: string, cont: string | undefined, remaining: number | undefined): Record<string, unknown> {
  const metadata: Record<string, unknown> = { resourceVersion: rv };
  if (cont !== undefined) metadata['continue'] = cont;
  if (remaining !== undefined) metadata['remainingItemCount'] = remaining;
  const out = r.listItemsCarryType
    ? items
    : items.map((o) => {
        const { kind: _k, apiVersion: _a, ...rest } = o;
        return rest;
      });
  return { kind: r.listKind, apiVersion: r.apiVersion, metadata, items: out };
}

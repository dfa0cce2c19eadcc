/** Query-parameter handling shared by the read verbs: selectors, resourceVersion, Table options and list bodies. */
import type { IncomingMessage } from 'node:http';
import { listItemJson } from '../engine/serialized.js';
import { ApiServerStatusError } from '../errors.js';
import type { ResourceType } from '../kinds/resource.js';
import { parseShardSelector, type ParsedShardSelector } from '../shard-selector.js';
export { inShard } from '../shard-selector.js';
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  type FieldRequirement,
  type LabelRequirement,
} from '../selectors.js';
import { badRequest, failure, invalid, tooLargeResourceVersion, type FieldError, type KubeStatus } from '../status.js';
import type { IncludeObject } from '../table.js';
import type { ApiServerObject } from '../types.js';
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
  throw new ApiServerStatusError(badRequest(`includeObject must be one of None, Metadata, Object: ${v}`));
}

/** Parsed `labelSelector` and `fieldSelector` (the field set is the kind's). */
export function selectors(r: ResourceType, q: URLSearchParams): { labels: LabelRequirement[]; fields: FieldRequirement[] } {
  return {
    labels: parseLabelSelector(q.get('labelSelector') ?? ''),
    fields: parseFieldSelector(q.get('fieldSelector') ?? '', r.supportedFields, (f) => r.unknownFieldMessage(f)),
  };
}

/**
 * The request's `shardSelector`, as kube-apiserver 1.36/1.37 with the `ShardedListAndWatch` gate
 * reads it (registry Store.ListPredicate and Store.Watch): undefined when the gate is off or the
 * parameter is absent or empty (both ignore it); a malformed one is the real answer, a 500 with
 * no reason, `invalid shard selector: …` (the parse error is not an API status, so the handler
 * reports it as an internal one).
 */
export function shardFilter(ctx: ServerContext, q: URLSearchParams): ParsedShardSelector | undefined {
  const raw = q.get('shardSelector') ?? '';
  if (!ctx.opts.shardedListAndWatch || raw === '') return undefined;
  const parsed = parseShardSelector(raw);
  if ('error' in parsed) throw new ApiServerStatusError(failure(500, '', `invalid shard selector: ${parsed.error}`));
  return parsed;
}

/** True when `o` passes both selectors. */
export function selected(r: ResourceType, o: ApiServerObject, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
  if (!matchesLabels(labels, o.metadata.labels)) return false;
  return fields.length === 0 || matchesFields(fields, r.fieldSet(o));
}

/** `APIObjectVersioner.ParseResourceVersion`'s complaint about `rv` (strconv.ParseUint wording), or undefined when it parses. */
export function resourceVersionError(rv: string): string | undefined {
  if (/^\d+$/.test(rv) && BigInt(rv) < 2n ** 64n) return undefined;
  const why = /^\d+$/.test(rv) ? 'value out of range' : 'invalid syntax';
  return `resourceVersion: Invalid value: ${JSON.stringify(rv)}: strconv.ParseUint: parsing ${JSON.stringify(rv)}: ${why}`;
}

/** A decimal resourceVersion for LIST, or the real server's 400 `invalid resource version: …`. */
export function parseRv(rv: string): number {
  const err = resourceVersionError(rv);
  if (err !== undefined) throw new ApiServerStatusError(badRequest(`invalid resource version: ${err}`));
  return Number(rv);
}

/**
 * A decimal resourceVersion for WATCH. The watch path hands the versioner's error to the client
 * unconverted, so the real server answers 500 with no reason (both with and without the watch cache).
 */
export function parseWatchRv(rv: string): number {
  const err = resourceVersionError(rv);
  if (err !== undefined) throw new ApiServerStatusError(failure(500, '', err));
  return Number(rv);
}

/** Waits for a future revision as the watch cache does, then answers 504 "Too large resource version". */
export async function awaitRevision(ctx: ServerContext, n: number, req: IncomingMessage): Promise<void> {
  if (n <= ctx.store.revision) return;
  // Without the watch cache etcd answers at once, and the Status carries no retry hint.
  if (ctx.opts.personality === 'uncached') throw new ApiServerStatusError(tooLargeResourceVersion(n, ctx.store.revision, 0));
  const ac = new AbortController();
  ctx.inflight.add(ac);
  const onClose = (): void => ac.abort();
  req.on('close', onClose);
  try {
    const ok = await ctx.store.waitForRevision(n, ctx.opts.tooLargeResourceVersionWaitMs, ac.signal);
    if (!ok) throw new ApiServerStatusError(tooLargeResourceVersion(n, ctx.store.revision, 1));
  } finally {
    req.off('close', onClose);
    ctx.inflight.delete(ac);
  }
}

/** A `<Kind>List` body; built-in list items drop kind/apiVersion as the typed lists do. */
export function listBody(
  r: ResourceType,
  items: ApiServerObject[],
  rv: string,
  cont: string | undefined,
  remaining: number | undefined,
): Record<string, unknown> {
  return {
    ...listEnvelope(r, rv, cont, remaining, undefined),
    items: items.map((o) => (r.listItemsCarryType ? o : withoutType(o))),
  };
}

const COMMA = Buffer.from(',');

/**
 * `JSON.stringify(listBody(...))` as UTF-8, byte for byte, in pieces: the envelope around each
 * item's cached bytes (engine/serialized.ts), so a LIST serializes none of its items again and
 * copies none of them into a page-sized buffer (one such buffer per page, in the external heap,
 * drove the server's full collections). `items` is the envelope's last member, so its `[]` is
 * where the items go.
 */
export function listJson(
  r: ResourceType,
  items: readonly ApiServerObject[],
  rv: string,
  cont: string | undefined,
  remaining: number | undefined,
  shardInfo?: { selector: string } | undefined,
): Buffer[] {
  const envelope = JSON.stringify({ ...listEnvelope(r, rv, cont, remaining, shardInfo), items: [] });
  const parts: Buffer[] = [Buffer.from(envelope.slice(0, -2))];
  items.forEach((o, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(listItemJson(o, r.listItemsCarryType));
  });
  parts.push(Buffer.from(envelope.slice(-2)));
  return parts;
}

function withoutType(o: ApiServerObject): Record<string, unknown> {
  const { kind: _k, apiVersion: _a, ...rest } = o;
  return rest;
}

function listEnvelope(
  r: ResourceType,
  rv: string,
  cont: string | undefined,
  remaining: number | undefined,
  shardInfo: { selector: string } | undefined,
): { kind: string; apiVersion: string; metadata: Record<string, unknown> } {
  const metadata: Record<string, unknown> = { resourceVersion: rv };
  if (cont !== undefined) metadata['continue'] = cont;
  if (remaining !== undefined) metadata['remainingItemCount'] = remaining;
  // ListMeta's last field: the applied selector in its canonical form, on a filtered list only.
  if (shardInfo !== undefined) metadata['shardInfo'] = shardInfo;
  return { kind: r.listKind, apiVersion: r.apiVersion, metadata };
}

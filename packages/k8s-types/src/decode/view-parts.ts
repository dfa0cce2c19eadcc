/**
 * The pieces of the bundled views that more than one reader of them must share: the shared empty
 * values, timestamp parsing, and the keys and tables that decide sharing. The zod views (`meta.ts`,
 * `pod.ts`) and the byte reader (`decode/pod-reader.ts`) both use these, so a view read either way
 * is the same value, down to which instances are shared. Not part of the package's public API.
 */

/** The value of an absent or `null` map: one frozen `{}` for every object. */
export const EMPTY_STRING_MAP: Readonly<Record<string, string>> = Object.freeze({});
/** The value of an absent or `null` list: one frozen `[]` for every object. */
export const EMPTY_LIST: readonly never[] = Object.freeze([]);

/** The number `count` ASCII digits at `start` spell, or NaN. */
function digits(text: string, start: number, count: number): number {
  let value = 0;
  for (let i = start; i < start + count; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return Number.NaN;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Epoch ms of an RFC3339 string. The apiserver writes every `Time` as `YYYY-MM-DDTHH:MM:SSZ`; that
 * shape is read directly (several times faster than `Date.parse`, which handles every other spelling
 * and rejects what is not a date).
 */
export function parseRfc3339(text: string): number {
  if (
    text.length === 20 &&
    text.charCodeAt(4) === 45 && // -
    text.charCodeAt(7) === 45 &&
    text.charCodeAt(10) === 84 && // T
    text.charCodeAt(13) === 58 && // :
    text.charCodeAt(16) === 58 &&
    text.charCodeAt(19) === 90 // Z
  ) {
    const ms = utcMs(
      digits(text, 0, 4),
      digits(text, 5, 2),
      digits(text, 8, 2),
      digits(text, 11, 2),
      digits(text, 14, 2),
      digits(text, 17, 2),
    );
    if (!Number.isNaN(ms)) return ms;
  }
  return Date.parse(text);
}

/**
 * Epoch ms of a `YYYY-MM-DDTHH:MM:SSZ` time from its fields, or NaN when a field is out of range
 * (or NaN: a non-digit): the caller then falls back to `Date.parse`, which decides.
 */
export function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  // NaN fails every comparison, so a non-digit also falls through.
  if (month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 && minute <= 59 && second <= 59) {
    return Date.UTC(year, month - 1, day, hour, minute, second);
  }
  return Number.NaN;
}

/**
 * The fields of an owner reference {@link ownerReferenceKey} reads: what both readers of the view
 * build (`OwnerReference` in `meta.ts`, read by zod or by `pod-reader.ts`).
 */
interface OwnerReferenceFields {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
  readonly controller?: boolean | undefined;
}

/** What determines an owner reference of the view: every field, `controller` included. */
export function ownerReferenceKey(ref: OwnerReferenceFields): string {
  return `${ref.apiVersion}\u0001${ref.kind}\u0001${ref.name}\u0001${ref.uid}\u0001${ref.controller === undefined ? '' : String(ref.controller)}`;
}

const sharedConditions = new Map<string, Map<string, Readonly<{ type: string; status: string }>>>();

/**
 * The one frozen condition `{ type, status }` for this pair: the view holds only the two, so
 * equal conditions across every pod in the cache are one object (a handful of distinct values).
 */
export function sharedCondition(type: string, status: string): Readonly<{ type: string; status: string }> {
  let byStatus = sharedConditions.get(type);
  if (byStatus === undefined) {
    // Bounded like the intern table: condition types are a short, fixed vocabulary.
    if (sharedConditions.size >= 1024) sharedConditions.clear();
    byStatus = new Map();
    sharedConditions.set(type, byStatus);
  }
  let shared = byStatus.get(status);
  if (shared === undefined) {
    shared = Object.freeze({ type, status });
    byStatus.set(status, shared);
  }
  return shared;
}

export function conditionKey(condition: { readonly type: string; readonly status: string }): string | undefined {
  // \u0001 separates the two fields; a field containing it is not shared (the key would be ambiguous).
  return condition.type.includes('\u0001') || condition.status.includes('\u0001')
    ? undefined
    : `${condition.type}\u0001${condition.status}`;
}

let recentIP: string | undefined;

/**
 * The instance read just before, when equal: `status.podIPs[0].ip` repeats `status.podIP` (read
 * first, in shape order), and JSON.parse gives each its own copy. One entry, so nothing to bound.
 */
export function reuseRecentIP(ip: string): string {
  if (ip === recentIP) return recentIP;
  recentIP = ip;
  return ip;
}

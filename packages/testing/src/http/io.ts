/** Reading requests and writing answers: JSON bodies, Status answers, media types and booleans as the apiserver parses them. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_JSON_DEPTH, nestingDepth } from '../engine/json-safe.js';
import { ApiServerStatusError } from '../errors.js';
import { badRequest, entityTooLarge, unsupportedMediaType, type KubeStatus } from '../status.js';

/** The apiserver's request body limit (3 MiB). */
export const MAX_BODY = 3 * 1024 * 1024;

/** Headers every JSON answer (including watch streams) carries. */
export const JSON_HEADERS = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' } as const;

/** `strconv.ParseBool`: the spellings Go accepts; anything else is `'invalid'`. */
export function parseBool(v: string | null): boolean | undefined | 'invalid' {
  if (v === null) return undefined;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False', ''].includes(v)) return false;
  return 'invalid';
}

/** The Content-Type without parameters, lower-cased ('' when absent). */
export function mediaType(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** 415 unless the body's media type is one of `accepted` (or absent). */
export function checkContentType(req: IncomingMessage, accepted: string[]): void {
  const ct = mediaType(req);
  if (ct === '' || ct === '*/*' || accepted.includes(ct)) return;
  throw new ApiServerStatusError(unsupportedMediaType(accepted));
}

/** Writes one JSON answer with its length. */
export function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { ...JSON_HEADERS, 'Content-Length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

/** Writes a Status answer; 429/503/504 with `retryAfterSeconds` also carry `Retry-After`. */
export function sendStatus(res: ServerResponse, s: KubeStatus): void {
  const headers: Record<string, string> = {};
  const retry = s.details?.retryAfterSeconds;
  if ((s.code === 429 || s.code === 504 || s.code === 503) && retry !== undefined) headers['Retry-After'] = String(retry);
  sendJson(res, s.code, s, headers);
}

/** The raw body, or a 413 Status once it passes {@link MAX_BODY} (the rest is drained, not kept). */
export function readBody(req: IncomingMessage): Promise<Buffer | KubeStatus> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on('data', (c: Buffer) => {
      if (tooBig) return;
      size += c.length;
      if (size > MAX_BODY) {
        tooBig = true;
        chunks.length = 0;
        resolve(entityTooLarge(MAX_BODY));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!tooBig) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

/** The body as JSON; empty is `undefined` when `optional`, else 400; undecodable JSON is 400. */
export async function readJson(req: IncomingMessage, optional: boolean): Promise<unknown> {
  const body = await readBody(req);
  if (!Buffer.isBuffer(body)) throw new ApiServerStatusError(body);
  const text = body.toString('utf8');
  if (text.trim() === '') {
    if (optional) return undefined;
    throw new ApiServerStatusError(badRequest('the body of the request was empty'));
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (e) {
    throw new ApiServerStatusError(badRequest(`the body of the request could not be decoded as JSON: ${(e as Error).message}`));
  }
  // Refused here, before any recursive copy, compare or freeze can exhaust the stack (a 500).
  if (nestingDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new ApiServerStatusError(
      badRequest(`the body of the request could not be decoded as JSON: exceeded max depth ${MAX_JSON_DEPTH}`),
    );
  }
  return value;
}

/** Writes one JSON answer given as pieces (a LIST around its items' cached bytes), with its length, in one corked write. */
export function sendJsonParts(res: ServerResponse, code: number, parts: readonly Buffer[]): void {
  let length = 0;
  for (const p of parts) length += p.length;
  res.writeHead(code, { ...JSON_HEADERS, 'Content-Length': String(length) });
  res.cork();
  for (const p of parts) res.write(p);
  res.end();
  res.uncork();
}

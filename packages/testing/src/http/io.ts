/** Reading requests and writing answers: JSON bodies, Status answers, media types and booleans as the apiserver parses them. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { MAX_JSON_DEPTH, nestingDepth } from '../engine/json-safe.js';
import { ApiServerStatusError } from '../errors.js';
import { badRequest, entityTooLarge, unsupportedMediaType, type KubeStatus } from '../status.js';
import { decodeProtobufBody, PROTOBUF_MEDIA_TYPE, ProtobufBodyError, protobufMessageFor } from './proto/decode.js';

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

/** What a body is read as: the kind the route expects (the apiserver's `into` and default type). */
export interface BodyKind {
  readonly apiVersion: string;
  readonly kind: string;
}

/**
 * The media types a body of `as` is accepted in: JSON, and protobuf for the kinds the published
 * `.proto` files define (built-in kinds and the meta/v1 options; custom resources have no protobuf form).
 */
export function bodyMediaTypes(as: BodyKind): string[] {
  return protobufMessageFor(as.apiVersion, as.kind) === undefined
    ? ['application/json']
    : ['application/json', PROTOBUF_MEDIA_TYPE];
}

/** kube-apiserver's `summarizeData(body, 30)`: JSON-looking text as is, anything else in hex. */
function summarize(body: Buffer): string {
  if (body.length === 0) return '<empty>';
  const head = body.subarray(0, 30);
  const text = body[0] === 0x7b ? head.toString('utf8') : head.toString('hex');
  return body.length > 30 ? `${text} ...` : text;
}

/**
 * The body as a JSON value; empty is `undefined` when `optional`, else 400; undecodable JSON is 400.
 * With `as` and a protobuf Content-Type, the body is decoded from protobuf (`k8s\0` + runtime.Unknown)
 * into the JSON the same object would have been sent as; an undecodable one is the apiserver's 400.
 */
export async function readJson(req: IncomingMessage, optional: boolean, as?: BodyKind | undefined): Promise<unknown> {
  const body = await readBody(req);
  if (!Buffer.isBuffer(body)) throw new ApiServerStatusError(body);
  if (as !== undefined && mediaType(req) === PROTOBUF_MEDIA_TYPE && protobufMessageFor(as.apiVersion, as.kind) !== undefined) {
    if (body.length === 0 && optional) return undefined;
    return readProtobuf(body, as);
  }
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

/** A protobuf body as JSON, or the 400 kube-apiserver's `transformDecodeError` words. */
function readProtobuf(body: Buffer, as: BodyKind): unknown {
  let value: unknown;
  try {
    value = decodeProtobufBody(body, as);
  } catch (e) {
    if (!(e instanceof ProtobufBodyError)) throw e;
    const t = e.typeMeta;
    if (t === undefined)
      throw new ApiServerStatusError(
        badRequest(`the object provided is unrecognized (must be of type ${as.kind}): ${e.message} (${summarize(body)})`),
      );
    const version = t.apiVersion.slice(t.apiVersion.indexOf('/') + 1);
    throw new ApiServerStatusError(
      badRequest(`${t.kind} in version "${version}" cannot be handled as a ${as.kind}: ${e.message}`),
    );
  }
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

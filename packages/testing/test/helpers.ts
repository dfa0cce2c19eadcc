import type { ApiServer, ResourceDefinition } from '../src/index.js';

/** The pod collection of the `default` namespace. */
export const PODS = '/api/v1/namespaces/default/pods';

/** The custom kind the tests register: namespaced `widgets.example.com/v1`. */
export const WIDGET: ResourceDefinition = { group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets' };

/** A decoded HTTP answer. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body the cases read at any depth without casts
  json: any;
}

/** One request against the server; the body is JSON-encoded unless it is a string. */
export async function call(
  server: ApiServer,
  method: string,
  path: string,
  opts: { body?: unknown; contentType?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['Content-Type'] = opts.contentType ?? 'application/json';
  }
  const res = await fetch(`${server.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A minimal pod body for POST. */
export function podBody(
  name: string,
  labels: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.9' }] },
    ...extra,
  };
}

/** A frame as read from a watch; `raw` is the line, `frame` its parse (undefined when not JSON). */
export interface Frame {
  raw: string;
  // biome-ignore lint/suspicious/noExplicitAny: a watch frame the cases read at any depth without casts
  frame: any;
}

/** Reads a watch stream line by line. */
export class WatchReader {
  #buffer = '';
  readonly #queue: Frame[] = [];
  readonly #wakers: Array<() => void> = [];
  #done = false;
  #failure: unknown;
  /** Resolves when the server ends the stream (EOF) or it fails. */
  readonly ended: Promise<'eof' | 'error'>;
  readonly #controller: AbortController;

  constructor(
    readonly status: number,
    readonly headers: Headers,
    body: ReadableStream<Uint8Array> | null,
    controller: AbortController,
  ) {
    this.#controller = controller;
    this.ended = this.#pump(body);
  }

  async #pump(body: ReadableStream<Uint8Array> | null): Promise<'eof' | 'error'> {
    if (body === null) {
      this.#finish();
      return 'eof';
    }
    const reader = body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.#buffer += decoder.decode(value, { stream: true });
        let i: number;
        while ((i = this.#buffer.indexOf('\n')) >= 0) {
          const raw = this.#buffer.slice(0, i);
          this.#buffer = this.#buffer.slice(i + 1);
          let frame: unknown;
          try {
            frame = JSON.parse(raw);
          } catch {
            frame = undefined;
          }
          this.#queue.push({ raw, frame });
          this.#wake();
        }
      }
      this.#finish();
      return 'eof';
    } catch (e) {
      this.#failure = e;
      this.#finish();
      return 'error';
    }
  }

  #finish(): void {
    this.#done = true;
    this.#wake();
  }

  #wake(): void {
    for (const w of this.#wakers.splice(0)) w();
  }

  /** The next line (rejects after `timeoutMs`, or when the stream ended with nothing left). */
  async next(timeoutMs = 3_000): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = this.#queue.shift();
      if (f !== undefined) return f;
      if (this.#done) throw new Error(`watch ended${this.#failure !== undefined ? ` with ${String(this.#failure)}` : ''}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a watch frame');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.#wakers.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Reads frames until one satisfies `pred`; returns it and everything skipped. */
  async until(pred: (f: Frame) => boolean, timeoutMs = 3_000): Promise<{ hit: Frame; skipped: Frame[] }> {
    const skipped: Frame[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const f = await this.next(Math.max(1, deadline - Date.now()));
      if (pred(f)) return { hit: f, skipped };
      skipped.push(f);
    }
  }

  /** Everything until EOF. */
  async rest(timeoutMs = 3_000): Promise<Frame[]> {
    const out: Frame[] = [];
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        out.push(await this.next(Math.max(1, deadline - Date.now())));
      } catch (e) {
        if (this.#done && this.#queue.length === 0) return out;
        throw e;
      }
    }
  }

  /** Frames already received and not yet read. */
  get buffered(): number {
    return this.#queue.length;
  }

  /** Aborts the request from the client side. */
  close(): void {
    this.#controller.abort();
  }
}

/** Opens `path` (a watch URL) and returns a reader once the response headers arrived. */
export async function watch(server: ApiServer, path: string, headers: Record<string, string> = {}): Promise<WatchReader> {
  const controller = new AbortController();
  const res = await fetch(`${server.url}${path}`, { headers, signal: controller.signal });
  return new WatchReader(res.status, res.headers, res.body, controller);
}

/** The event types of parsed frames. */
export function types(frames: Frame[]): string[] {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-return
  return frames.map((f) => f.frame?.type);
}

/**
 * The 500s kube-apiserver itself answers by design (a plain error from etcd3 or the versioner that
 * no handler converts): a create carrying a resourceVersion, a watch from a malformed one, and a malformed shardSelector (1.36+, gate on).
 * Fuzz properties allow exactly these.
 */
export function isUpstream500(status: number, body: string): boolean {
  if (status !== 500) return false;
  return (
    body.includes('resourceVersion should not be set on objects to be created') ||
    // kube-apiserver 1.36+ with ShardedListAndWatch answers a malformed shardSelector with this 500.
    /"message":"invalid shard selector: /.test(body) ||
    /resourceVersion: Invalid value: .*strconv\.ParseUint/.test(body)
  );
}

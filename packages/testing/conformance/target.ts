/**
 * A conformance target: one apiserver reached over raw HTTP(S) with a bearer token — the embedded
 * server or a real kube-apiserver — plus the two writes only a scheduler makes (binding).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** One answer, decoded. */
export interface Answer {
  status: number;
  contentType: string;
  /** The `Warning` header(s), joined by `, ` ('' when none). */
  warning: string;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON body the cases read at any depth without casts
  json: any;
}

/** Where and how to reach a server. */
export interface Access {
  server: string;
  token: string;
  /** PEM of the serving CA for https. */
  ca?: string;
}

/** Reads server, CA and token from a simple kubeconfig (the first cluster and user). */
export function accessFromKubeconfig(yaml: string): Access {
  const server = /server:\s*"?([^"\s]+)"?/.exec(yaml)?.[1];
  const token = /token:\s*"?([^"\s]+)"?/.exec(yaml)?.[1];
  const caData = /certificate-authority-data:\s*"?([^"\s]+)"?/.exec(yaml)?.[1];
  if (server === undefined || token === undefined) throw new Error('kubeconfig needs a server and a bearer token');
  const out: Access = { server, token };
  if (caData !== undefined) out.ca = Buffer.from(caData, 'base64').toString('utf8');
  return out;
}

/** Options of one request. */
export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  /** `false`: no Authorization header (anonymous); a string: that token. */
  token?: string | false;
  /** For watches: stop reading after this many ms (the answer holds what arrived). */
  maxMs?: number;
  /** The `Accept` header; default `application/json`. */
  accept?: string;
}

/** A server the cases run against. */
export class Target {
  constructor(
    readonly name: string,
    readonly access: Access,
    /** The scheduler's binding, which the embedded server does through its typed controls. */
    readonly bind: (ns: string, pod: string, node: string) => Promise<void>,
  ) {}

  /** One request; the body is JSON-encoded unless a string. */
  request(method: string, path: string, o: RequestOptions = {}): Promise<Answer> {
    const url = new URL(path, this.access.server);
    const headers: Record<string, string> = { Accept: o.accept ?? 'application/json' };
    const token = o.token ?? this.access.token;
    if (token !== false) headers['Authorization'] = `Bearer ${token}`;
    let body: string | undefined;
    if (o.body !== undefined) {
      body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
      headers['Content-Type'] = o.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, ...(this.access.ca !== undefined ? { ca: this.access.ca } : {}) }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        const finish = (): void => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          const w = res.headers['warning'];
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            warning: Array.isArray(w) ? w.join(', ') : (w ?? ''),
            text,
            json,
          });
        };
        res.on('end', finish);
        res.on('error', finish);
        if (o.maxMs !== undefined) {
          setTimeout(() => {
            res.destroy();
            finish();
          }, o.maxMs).unref();
        }
      });
      req.on('error', reject);
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
      if (body !== undefined) req.write(body);
      req.end();
    });
  }

  /** Watch frames (parsed lines) that arrive until EOF or `maxMs`. */
  async frames(path: string, maxMs: number, accept?: string): Promise<Array<{ type: string; object: Record<string, unknown> }>> {
    const a = await this.request('GET', path, accept === undefined ? { maxMs } : { maxMs, accept });
    return a.text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as { type: string; object: Record<string, unknown> }];
        } catch {
          return [];
        }
      });
  }

  /** Creates a namespace (201, or 409 when it exists). */
  async namespace(ns: string): Promise<void> {
    const a = await this.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    });
    if (a.status !== 201 && a.status !== 409) throw new Error(`${this.name}: creating namespace ${ns}: ${a.status} ${a.text}`);
  }
}

import { createServer, request, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What {@link httpGet} answers: the status, the content type and the whole body. */
export interface HttpGetResult {
  readonly status: number;
  readonly type: string | undefined;
  readonly body: string;
}

/**
 * One request over loopback HTTP (probes, `/metrics`), read to the end. Rejects on a transport
 * error or after `timeoutMs` (10 s); any status resolves, so a test asserts the 500 of a red probe as readily as a 200.
 */
export function httpGet(
  url: string,
  init: { method?: string; accept?: string; timeoutMs?: number } = {},
): Promise<HttpGetResult> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: init.method ?? 'GET',
        headers: init.accept ? { accept: init.accept } : {},
        signal: AbortSignal.timeout(init.timeoutMs ?? 10_000),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A handler served on an ephemeral loopback port (probes, `/metrics`), for one test. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Drops open connections and stops listening. */
  close(): Promise<void>;
}

/** Serves `handler` on `127.0.0.1` at a port the OS picks, as a Deployment's probes would reach it. */
export async function serveOnLoopback(handler: RequestListener): Promise<LoopbackServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

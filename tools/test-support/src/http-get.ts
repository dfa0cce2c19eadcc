import { request } from 'node:http';

/** What {@link httpGet} answers: the status, the content type and the whole body. */
export interface HttpGetResult {
  readonly status: number;
  readonly type: string | undefined;
  readonly body: string;
}

/**
 * One request over loopback HTTP (probes, `/metrics`), read to the end. Rejects on a transport
 * error; any status resolves, so a test asserts the 500 of a red probe as readily as a 200.
 */
export function httpGet(url: string, init: { method?: string; accept?: string } = {}): Promise<HttpGetResult> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.accept ? { accept: init.accept } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

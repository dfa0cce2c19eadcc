import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport, KubeClient, staticAuth, type TransportRequest, type TransportResponse } from './all.js';
import { BACKLOG_READ_BYTES, bareSocketCan, openWatchStream, READ_BUFFER_BYTES, ReadBuffers } from '../src/http/watch-stream.js';

/** A self-signed certificate for localhost and 127.0.0.1, valid until 2126: test material only. */
const CERT = readFileSync(new URL('./fixtures/localhost-cert.pem', import.meta.url), 'utf8');
const KEY = readFileSync(new URL('./fixtures/localhost-key.pem', import.meta.url), 'utf8');

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** What a raw server saw of one connection: the request's bytes, and the socket to answer on. */
interface Connection {
  readonly socket: net.Socket;
  readonly request: Promise<string>;
}

/** A server that hands each connection to `onConnection` with the request head as text. */
async function rawServer(
  onConnection: (connection: Connection) => void,
  secure = false,
): Promise<{ url: string; connections: Connection[] }> {
  const connections: Connection[] = [];
  const accept = (socket: net.Socket): void => {
    let text = '';
    const request = new Promise<string>((resolve) => {
      socket.on('data', (data: Buffer) => {
        text += data.toString('latin1');
        if (text.includes('\r\n\r\n')) resolve(text);
      });
    });
    socket.on('error', () => {});
    const connection = { socket, request };
    connections.push(connection);
    onConnection(connection);
  };
  const server = secure ? tls.createServer({ cert: CERT, key: KEY }, accept) : net.createServer(accept);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `${secure ? 'https' : 'http'}://127.0.0.1:${port}`, connections };
}

function watchRequest(url: string, signal = new AbortController().signal): TransportRequest {
  return {
    method: 'GET',
    url: new URL(`${url}/api/v1/pods?watch=true&resourceVersion=7`),
    headers: { Accept: 'application/json' },
    signal,
    stream: true,
  };
}

/** Reads a body to its end, copying each piece as it comes (as a reader must). */
async function readAll(response: TransportResponse): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of response.body) pieces.push(Buffer.from(piece as Uint8Array));
  return Buffer.concat(pieces);
}

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

const OK_CHUNKED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

/** Writes `parts` one per turn of the event loop, so the client meets them in separate reads. */
async function dribble(socket: net.Socket, parts: readonly string[]): Promise<void> {
  for (const part of parts) {
    socket.write(part);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('[kube_client: watch socket] a watch read off a bare socket', () => {
  it('[kube_client: watch socket] sends a GET with the path, query, Host, headers and Connection: close, and reads a chunked body cut across reads', async () => {
    const frames = ['{"type":"ADDED","object":{"a":1}}\n', '{"type":"MODIFIED","object":{"b":"é"}}\n'];
    const wire = OK_CHUNKED + frames.map(chunk).join('') + '0\r\n\r\n';
    const { url, connections } = await rawServer(
      ({ socket, request }) => void request.then(() => dribble(socket, wire.match(/[\s\S]{1,7}/g)!)),
    );
    const response = await openWatchStream(watchRequest(url), { headers: { Authorization: 'Bearer t0k' } });
    expect(response.status).toBe(200);
    expect(response.header('CONTENT-TYPE')).toBe('application/json');
    expect((await readAll(response)).toString()).toBe(frames.join(''));
    const sent = await connections[0]!.request;
    expect(sent).toBe(
      `GET /api/v1/pods?watch=true&resourceVersion=7 HTTP/1.1\r\nHost: ${new URL(url).host}\r\nAuthorization: Bearer t0k\r\nAccept: application/json\r\nConnection: close\r\n\r\n`,
    );
  });

  it('[kube_client: watch socket] a piece stays intact until the next is asked for: the socket is paused while the reader holds it', async () => {
    const first = 'a'.repeat(1000);
    const { url } = await rawServer(
      ({ socket, request }) =>
        void request.then(async () => {
          socket.write(OK_CHUNKED + chunk(first));
          await new Promise((resolve) => setTimeout(resolve, 20));
          // More than the read buffer, while the reader holds the first piece.
          for (let i = 0; i < 40; i++) socket.write(chunk('b'.repeat(8192)));
          socket.end('0\r\n\r\n');
        }),
    );
    const response = await openWatchStream(watchRequest(url), {});
    const iterator = response.body[Symbol.asyncIterator]();
    const held = (await iterator.next()).value as Uint8Array;
    expect(Buffer.from(held).toString()).toBe(first);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(Buffer.from(held).toString()).toBe(first);
    let rest = 0;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      expect(Buffer.from(next.value as Uint8Array).every((byte) => byte === 0x62)).toBe(true);
      rest += (next.value as Uint8Array).length;
    }
    expect(rest).toBe(40 * 8192);
  });

  it('[kube_client: watch socket] a backlog grows the reads: once a read fills the buffer, reads take up to 1 MiB; every piece arrives intact', async () => {
    // 6 MiB of a pattern no two pieces share by accident, written at once: a backlog.
    const body = Buffer.alloc(6 * 1024 * 1024);
    for (let i = 0; i < body.length; i += 4) body.writeUInt32LE(i, i);
    const serve = async (backlogReadBytes?: number): Promise<{ sizes: number[]; whole: Buffer }> => {
      const { url } = await rawServer(
        ({ socket, request }) =>
          void request.then(() =>
            socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body])),
          ),
      );
      const response = await openWatchStream(watchRequest(url), {}, backlogReadBytes);
      const sizes: number[] = [];
      const copies: Buffer[] = [];
      for await (const piece of response.body) {
        const bytes = piece as Uint8Array;
        // Slower than the server: the kernel's buffers fill while this reader waits.
        await new Promise((resolve) => setTimeout(resolve, 1));
        sizes.push(bytes.length);
        copies.push(Buffer.from(bytes));
      }
      return { sizes, whole: Buffer.concat(copies) };
    };
    const grown = await serve();
    expect(grown.whole.equals(body)).toBe(true);
    expect(Math.max(...grown.sizes)).toBeGreaterThan(READ_BUFFER_BYTES);
    expect(Math.max(...grown.sizes)).toBeLessThanOrEqual(BACKLOG_READ_BYTES);
    // watchBacklogReadBytes at the read buffer's size or under: reads never grow.
    const fixed = await serve(READ_BUFFER_BYTES);
    expect(fixed.whole.equals(body)).toBe(true);
    expect(Math.max(...fixed.sizes)).toBeLessThanOrEqual(READ_BUFFER_BYTES);
    expect(() => httpTransport(staticAuth({ server: 'http://127.0.0.1:1' }), { watchBacklogReadBytes: 0 })).toThrow(
      /watchBacklogReadBytes must be a positive integer/,
    );
  });

  it('[kube_client: watch socket] a backlog over, the reads go back to 128 KiB: a read that leaves the grown buffer part empty sends the next to 128 KiB and its memory leaves every view of it; a new backlog grows them again; every piece arrives intact', async () => {
    const backlog = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < backlog.length; i += 4) backlog.writeUInt32LE(i, i);
    const small = (i: number): Buffer => Buffer.from(`small ${String(i).padStart(4, '0')};`.repeat(10));
    const quiet = 6;
    const parts = [backlog, ...Array.from({ length: quiet }, (_, i) => small(i)), backlog];
    const length = parts.reduce((sum, part) => sum + part.length, 0);
    // The server writes the body only once the reader has the head, and each part only once the
    // reader has all before it: each read after the head's is one piece, each small part a read of its own.
    let headSeen: () => void = () => undefined;
    const head = new Promise<void>((resolve) => {
      headSeen = resolve;
    });
    let received = 0;
    let wanted = 0;
    let caughtUp: (() => void) | undefined;
    const upTo = (bytes: number): Promise<void> =>
      new Promise((resolve) => {
        wanted = bytes;
        caughtUp = resolve;
        if (received >= wanted) resolve();
      });
    const { url } = await rawServer(
      ({ socket, request }) =>
        void request.then(async () => {
          socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${length}\r\n\r\n`);
          await head;
          let sent = 0;
          for (const part of parts) {
            await upTo(sent);
            socket.write(part);
            sent += part.length;
          }
          socket.end();
        }),
    );
    const response = await openWatchStream(watchRequest(url), {});
    headSeen();
    const pieces: { view: Uint8Array; copy: Buffer; bufferBytes: number }[] = [];
    for await (const piece of response.body) {
      const bytes = piece as Uint8Array;
      pieces.push({ view: bytes, copy: Buffer.from(bytes), bufferBytes: bytes.buffer.byteLength });
      // Slower than the server: the kernel's buffers fill while this reader waits (a backlog).
      await new Promise((resolve) => setTimeout(resolve, 1));
      received += bytes.length;
      if (received >= wanted) caughtUp?.();
    }
    expect(Buffer.concat(pieces.map((p) => p.copy)).equals(Buffer.concat(parts))).toBe(true);
    // The buffer each read went to, by the rule: a full read of 128 KiB grows the next; a part-empty
    // read of the grown buffer sends the next back. (How the backlogs split into reads varies.)
    let size = READ_BUFFER_BYTES;
    const expected: number[] = [];
    for (const piece of pieces) {
      expected.push(size);
      const full = piece.copy.length === size;
      if (full && size < BACKLOG_READ_BYTES) size = BACKLOG_READ_BYTES;
      else if (!full && size > READ_BUFFER_BYTES) size = READ_BUFFER_BYTES;
    }
    expect(pieces.map((p) => p.bufferBytes)).toEqual(expected);
    // Not vacuous: each backlog grew the reads, and the small parts after the first went to 128 KiB.
    const firstSmall = pieces.findIndex((p) => p.copy.equals(small(0)));
    expect(pieces.slice(0, firstSmall).some((p) => p.bufferBytes === BACKLOG_READ_BYTES)).toBe(true);
    expect(pieces.slice(firstSmall + 1, firstSmall + quiet).map((p) => p.bufferBytes)).toEqual(
      Array(quiet - 1).fill(READ_BUFFER_BYTES),
    );
    expect(pieces.slice(firstSmall + quiet).some((p) => p.bufferBytes === BACKLOG_READ_BYTES)).toBe(true);
    // The first backlog's grown buffer was let go: its memory moved out, so the views of it this
    // test kept (as a suspended reader's frame would) hold none of it.
    const grownViews = pieces.slice(0, firstSmall + 1).filter((p) => p.bufferBytes === BACKLOG_READ_BYTES);
    expect(grownViews.map((p) => p.view.byteLength)).toEqual(grownViews.map(() => 0));
  });

  it('[kube_client: LIST page buffer] a whole-body read never grows its reads and hands its read buffer to a read already counted when it closes; the last one keeps none', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < body.length; i += 4) body.writeUInt32LE(i, i);
    const { url } = await rawServer(
      ({ socket, request }) =>
        void request.then(() =>
          socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body])),
        ),
    );
    const reads = new ReadBuffers();
    const readOnce = async (next: boolean): Promise<{ memory: Set<ArrayBufferLike>; sizes: number[]; whole: Buffer }> => {
      const response = await openWatchStream({ ...watchRequest(url), readWhole: true }, {}, BACKLOG_READ_BYTES, reads);
      const memory = new Set<ArrayBufferLike>();
      const sizes: number[] = [];
      const copies: Buffer[] = [];
      for await (const piece of response.body) {
        const bytes = piece as Uint8Array;
        await new Promise((resolve) => setTimeout(resolve, 1)); // a backlog builds up
        memory.add(bytes.buffer);
        sizes.push(bytes.length);
        copies.push(Buffer.from(bytes));
      }
      // As the transport counts them: the next page's read is counted before this response closes.
      if (next) reads.begin();
      response.close();
      reads.end();
      return { memory, sizes, whole: Buffer.concat(copies) };
    };
    reads.begin();
    const first = await readOnce(true);
    expect(reads.holding).toBe(true);
    const second = await readOnce(false);
    expect(reads.holding).toBe(false); // nothing else counted: an idle transport holds no read buffer
    for (const read of [first, second]) {
      expect(read.whole.equals(body)).toBe(true);
      expect(Math.max(...read.sizes)).toBe(READ_BUFFER_BYTES); // reads filled the buffer, and it never grew
      expect(read.memory.size).toBe(1);
    }
    expect([...second.memory][0]).toBe([...first.memory][0]);
  });

  it('[kube_client: watch socket] an error answer with a Content-Length, a body to the end of the connection, 1xx heads dropped', async () => {
    const status = '{"kind":"Status","code":410,"reason":"Expired"}';
    const answers = [
      `HTTP/1.1 410 Gone\r\nContent-Length: ${status.length}\r\n\r\n${status}`,
      `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\n\r\nline one\nline two\n`,
    ];
    let n = 0;
    const { url } = await rawServer(({ socket, request }) => {
      const answer = answers[n++]!;
      void request.then(() => (n === 1 ? socket.write(answer) : socket.end(answer)));
    });
    const gone = await openWatchStream(watchRequest(url), {});
    expect(gone.status).toBe(410);
    expect((await readAll(gone)).toString()).toBe(status);
    const untilClose = await openWatchStream(watchRequest(url), {});
    expect(untilClose.status).toBe(200);
    expect((await readAll(untilClose)).toString()).toBe('line one\nline two\n');
  });

  it('[kube_client: watch socket] a 101 (switching protocols) answer fails with HPE_PAUSED_UPGRADE, on the bare socket and through node:http (which, unheard, would end the request with neither a response nor an error)', async () => {
    const { url } = await rawServer(
      ({ socket, request }) =>
        void request.then(() =>
          socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nxyz'),
        ),
    );
    await expect(openWatchStream(watchRequest(url), {})).rejects.toMatchObject({
      code: 'HPE_PAUSED_UPGRADE',
      message: 'the server switched protocols on a watch',
    });
    // Through node:http (a request that is not streamed) too, rather than a request that never settles.
    const transport = httpTransport(staticAuth({ server: url }));
    const plain = { method: 'GET', url: new URL(`${url}/api/v1/pods`), headers: {}, signal: AbortSignal.timeout(5000) } as const;
    await expect(transport(plain)).rejects.toMatchObject({
      code: 'HPE_PAUSED_UPGRADE',
      message: 'the server switched protocols',
    });
  });

  it('[kube_client: watch socket] a connection closed before the head is "socket hang up"; one cut mid-body fails the read; both ECONNRESET, as node:http says', async () => {
    let n = 0;
    const { url } = await rawServer(({ socket, request }) => {
      const which = n++;
      void request.then(() =>
        which === 0
          ? socket.end('HTTP/1.1 200 OK\r\nTransfer-')
          : socket.end(OK_CHUNKED + chunk('{"type":"ADDED"}\n') + '40\r\n{"cut'),
      );
    });
    await expect(openWatchStream(watchRequest(url), {})).rejects.toMatchObject({ code: 'ECONNRESET', message: 'socket hang up' });
    const cut = await openWatchStream(watchRequest(url), {});
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const piece of cut.body) seen.push(Buffer.from(piece as Uint8Array).toString());
      })(),
    ).rejects.toMatchObject({ code: 'ECONNRESET' });
    expect(seen.join('')).toBe('{"type":"ADDED"}\n{"cut');
  });

  it('[kube_client: watch socket] a head over 16 KiB and a broken chunk size fail; an abort ends the wait for the head and the wait for the body', async () => {
    let n = 0;
    const { url } = await rawServer(({ socket, request }) => {
      const which = n++;
      void request.then(() => {
        if (which === 0) socket.write(`HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(17_000)}\r\n\r\n`);
        else if (which === 1) socket.write(`${OK_CHUNKED}zz\r\n`);
        else if (which === 3) socket.write(OK_CHUNKED + chunk('{"a":1}\n'));
        // 2: never answers.
      });
    });
    await expect(openWatchStream(watchRequest(url), {})).rejects.toMatchObject({ code: 'HPE_HEADER_OVERFLOW' });
    const broken = await openWatchStream(watchRequest(url), {});
    await expect(readAll(broken)).rejects.toMatchObject({ code: 'HPE_INVALID_CHUNK_SIZE' });
    const waiting = new AbortController();
    const pending = openWatchStream(watchRequest(url, waiting.signal), {});
    setTimeout(() => waiting.abort(new Error('stop')), 20);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    const reading = new AbortController();
    const open = await openWatchStream(watchRequest(url, reading.signal), {});
    const iterator = open.body[Symbol.asyncIterator]();
    expect(Buffer.from((await iterator.next()).value as Uint8Array).toString()).toBe('{"a":1}\n');
    const next = iterator.next();
    reading.abort();
    await expect(next).rejects.toMatchObject({ name: 'AbortError' });
    // An aborted signal before sending: nothing is read.
    await expect(openWatchStream(watchRequest(url, AbortSignal.abort()), {})).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('[kube_client: watch socket] a header value with CR or LF is refused before anything is sent; basic auth becomes a header unless one is given', async () => {
    const { url, connections } = await rawServer(
      ({ socket, request }) => void request.then(() => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n')),
    );
    await expect(openWatchStream({ ...watchRequest(url), headers: { 'X-Evil': 'a\r\nInjected: 1' } }, {})).rejects.toMatchObject({
      code: 'ERR_INVALID_CHAR',
    });
    expect(connections).toHaveLength(0);
    await readAll(await openWatchStream(watchRequest(url), { auth: 'alice:s3cret' }));
    expect(await connections[0]!.request).toContain(
      `\r\nAuthorization: Basic ${Buffer.from('alice:s3cret').toString('base64')}\r\n`,
    );
    await readAll(await openWatchStream(watchRequest(url), { auth: 'alice:s3cret', headers: { Authorization: 'Bearer wins' } }));
    const second = await connections[1]!.request;
    expect(second).toContain('\r\nAuthorization: Bearer wins\r\n');
    expect(second).not.toContain('Basic');
  });

  it('[kube_client: watch socket] over TLS: verified with the given CA and SNI for a host name; an unknown CA is refused', async () => {
    let sni: string | false | null | undefined;
    const { url } = await rawServer(({ socket, request }) => {
      sni = (socket as tls.TLSSocket).servername;
      void request.then(() => socket.end(OK_CHUNKED + chunk('{"tls":true}\n') + '0\r\n\r\n'));
    }, true);
    const byName = url.replace('127.0.0.1', 'localhost');
    const response = await openWatchStream(watchRequest(byName), { ca: CERT });
    expect((await readAll(response)).toString()).toBe('{"tls":true}\n');
    expect(sni).toBe('localhost');
    // By IP: no SNI (as node:https), the certificate's IP SAN verifies it.
    await readAll(await openWatchStream(watchRequest(url), { ca: CERT }));
    expect(sni).toBe(false);
    await expect(openWatchStream(watchRequest(url), { rejectUnauthorized: true })).rejects.toMatchObject({
      code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
    });
    await readAll(await openWatchStream(watchRequest(url), { rejectUnauthorized: false }));
  });

  it('[kube_client: watch socket] only plain options go to the bare socket: a proxy agent, a socket path, a lookup or a proxy from the environment keep node:http', () => {
    expect(
      bareSocketCan({
        headers: { a: 'b' },
        ca: 'x',
        cert: 'y',
        key: 'z',
        rejectUnauthorized: false,
        servername: 'k',
        auth: 'u:p',
      }),
    ).toBe(true);
    expect(bareSocketCan({ agent: new http.Agent() })).toBe(true);
    expect(bareSocketCan({ agent: new https.Agent({ ca: 'x' }) })).toBe(true);
    class ProxyAgent extends https.Agent {}
    expect(bareSocketCan({ agent: new ProxyAgent() })).toBe(false);
    expect(bareSocketCan({ socketPath: '/run/k8s.sock' })).toBe(false);
    expect(bareSocketCan({ lookup: () => {} })).toBe(false);
    expect(bareSocketCan({ localAddress: '10.0.0.1' })).toBe(false);
    // Node 24+'s proxy from the environment: node:http would use it, so the bare socket does not connect around it.
    const plain = { headers: {}, ca: 'x' };
    expect(bareSocketCan(plain, { NODE_USE_ENV_PROXY: '1', HTTPS_PROXY: 'http://proxy:3128' }, [])).toBe(false);
    expect(bareSocketCan(plain, { http_proxy: 'http://proxy:3128' }, ['--use-env-proxy'])).toBe(false);
    expect(bareSocketCan(plain, { HTTPS_PROXY: 'http://proxy:3128' }, [])).toBe(true);
    expect(bareSocketCan(plain, { NODE_USE_ENV_PROXY: '1' }, [])).toBe(true);
    expect(bareSocketCan(plain, { NODE_USE_ENV_PROXY: '0', HTTPS_PROXY: 'http://proxy:3128' }, [])).toBe(true);
  });

  it('[kube_client: watch socket] httpTransport reads a streamed GET off a bare socket and anything else through node:http; watchOnBareSocket: false keeps watches on node:http', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.headers.connection}`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}\n');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const auth = staticAuth({ server: url, token: 't' });
    const read = async (transport: ReturnType<typeof httpTransport>, stream: boolean): Promise<string> =>
      (await readAll(await transport({ ...watchRequest(url), stream }))).toString();
    expect(await read(httpTransport(auth), true)).toBe('{"ok":true}\n');
    expect(await read(httpTransport(auth), false)).toBe('{"ok":true}\n');
    expect(await read(httpTransport(auth, { watchOnBareSocket: false }), true)).toBe('{"ok":true}\n');
    // The bare socket says Connection: close; node:http keeps its connection alive.
    expect(seen).toEqual(['GET close', 'GET keep-alive', 'GET keep-alive']);
  });

  it('[kube_client: watch socket] a watch answered with an error whose Status spans reads: the client reads it whole into memory of its own (KubeApiError with the full message)', async () => {
    const message = `too old resource version: 7 (${'x'.repeat(3000)})`;
    const status = JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message });
    const { url } = await rawServer(
      ({ socket, request }) =>
        void request.then(async () => {
          // The Status in two chunks, a read apart: the second read reuses the first one's buffer.
          socket.write(
            `HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(status.slice(0, 2000))}`,
          );
          await new Promise((resolve) => setTimeout(resolve, 30));
          socket.end(`${chunk(status.slice(2000))}0\r\n\r\n`);
        }),
    );
    const client = new KubeClient({ server: url, maxRetries: 0 });
    const watch = client.stream({ verb: 'watch', method: 'GET', path: '/api/v1/pods', query: { watch: true } });
    await expect(watch.next()).rejects.toMatchObject({ statusCode: 410, reason: 'Expired', status: { message } });
  });
});

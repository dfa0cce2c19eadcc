import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TcpProxy } from '../src/index.js';

// The proxy is exercised against a loopback echo server, so this file needs no control plane.

async function echoServer(): Promise<{ server: Server; port: number; received: () => number }> {
  let received = 0;
  const server = createServer((socket) =>
    socket.on('error', () => undefined).on('data', (chunk: Buffer) => ((received += chunk.length), socket.write(chunk))),
  );
  const port = await new Promise<number>((resolvePort) =>
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = server.address();
      resolvePort(typeof a === 'object' && a !== null ? a.port : 0);
    }),
  );
  return { server, port, received: () => received };
}

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setImmediate(r));
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(cond()).toBe(true);
}

function client(port: number): Promise<{ socket: Socket; echoed: () => string }> {
  return new Promise((resolveClient, reject) => {
    let echoed = '';
    const socket = connect({ host: '127.0.0.1', port }, () => resolveClient({ socket, echoed: () => echoed }));
    socket.setEncoding('utf8').on('data', (s: string) => (echoed += s));
    socket.on('error', reject);
  });
}

describe('TcpProxy', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('forwards both ways, holds bytes while stalled without closing, and delivers them on resume', async () => {
    const echo = await echoServer();
    cleanups.push(() => new Promise<void>((r) => echo.server.close(() => r())));
    const proxy = await TcpProxy.start(echo.port);
    cleanups.push(() => proxy.close());
    const c = await client(proxy.port);
    cleanups.push(() => void c.socket.destroy());

    c.socket.write('ping');
    await until(() => c.echoed() === 'ping');
    expect(proxy.accepted).toBe(1);

    proxy.stall();
    c.socket.write('stalled');
    await until(() => proxy.heldBytes === 'stalled'.length);
    // Held at the proxy: the upstream never saw it, and the connection is still open.
    expect(echo.received()).toBe('ping'.length);
    expect(proxy.openConnections).toBe(1);
    expect(c.socket.destroyed).toBe(false);

    proxy.resume();
    await until(() => c.echoed() === 'pingstalled');
    expect(proxy.heldBytes).toBe(0);
  });

  it('dropConnections resets open connections and keeps accepting new ones', async () => {
    const echo = await echoServer();
    cleanups.push(() => new Promise<void>((r) => echo.server.close(() => r())));
    const proxy = await TcpProxy.start(echo.port);
    cleanups.push(() => proxy.close());
    const first = await client(proxy.port);
    const closed = new Promise<void>((r) => first.socket.on('close', () => r()));
    first.socket.on('error', () => undefined);
    await until(() => proxy.openConnections === 1);
    proxy.dropConnections();
    await closed;
    const second = await client(proxy.port);
    cleanups.push(() => void second.socket.destroy());
    second.socket.write('again');
    await until(() => second.echoed() === 'again');
    expect(proxy.accepted).toBe(2);
  });
});

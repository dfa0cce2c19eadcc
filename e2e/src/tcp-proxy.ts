import { connect, createServer, type Server, type Socket } from 'node:net';

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

/**
 * A loopback TCP forwarder in front of an apiserver. `stall()` stops delivering bytes in both
 * directions while every connection stays open — a silent stall, the failure only an idle
 * timeout can catch: no FIN, no RST, no error. TLS passes through untouched.
 */
export class TcpProxy {
  readonly port: number;
  readonly #server: Server;
  readonly #pairs = new Set<Pair>();
  #stalled = false;
  #accepted = 0;

  private constructor(server: Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  /** Listens on 127.0.0.1 (`listenPort` 0 picks a free port) and forwards to `targetPort`. */
  static async start(targetPort: number, options: { targetHost?: string; listenPort?: number } = {}): Promise<TcpProxy> {
    const host = options.targetHost ?? '127.0.0.1';
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => {
      // A connection cannot arrive before listen() resolves and `proxy` is set.
      if (proxy) proxy.#accept(client, host, targetPort);
      else client.destroy();
    });
    const port = await new Promise<number>((resolvePort, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: options.listenPort ?? 0 }, () => {
        const address = server.address();
        resolvePort(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    proxy = new TcpProxy(server, port);
    return proxy;
  }

  #accept(client: Socket, host: string, port: number): void {
    this.#accepted++;
    const upstream = connect({ host, port });
    const pair: Pair = { client, upstream, held: { toUpstream: [], toClient: [] } };
    this.#pairs.add(pair);
    const close = (): void => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.on('data', (chunk: Buffer) => (this.#stalled ? pair.held.toUpstream.push(chunk) : upstream.write(chunk)));
    upstream.on('data', (chunk: Buffer) => (this.#stalled ? pair.held.toClient.push(chunk) : client.write(chunk)));
  }

  /** URL of the proxy for an https apiserver behind it. */
  get server(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Connections accepted so far (each reconnect of a client adds one). */
  get accepted(): number {
    return this.#accepted;
  }

  /** Connections currently open. */
  get openConnections(): number {
    return this.#pairs.size;
  }

  /** Bytes read from either side while stalled and not yet forwarded. */
  get heldBytes(): number {
    let n = 0;
    for (const pair of this.#pairs) for (const chunk of [...pair.held.toUpstream, ...pair.held.toClient]) n += chunk.length;
    return n;
  }

  /** True while stalled. */
  get stalled(): boolean {
    return this.#stalled;
  }

  /**
   * Stops forwarding: bytes keep being read from both sides and are held (so a test can see
   * they arrived), none is delivered, nothing is closed.
   */
  stall(): void {
    this.#stalled = true;
  }

  /** Forwards again, first delivering what was held. */
  resume(): void {
    this.#stalled = false;
    for (const pair of this.#pairs) {
      for (const chunk of pair.held.toUpstream.splice(0)) pair.upstream.write(chunk);
      for (const chunk of pair.held.toClient.splice(0)) pair.client.write(chunk);
    }
  }

  /** Resets every open connection (RST both ways); the listener keeps accepting. */
  dropConnections(): void {
    for (const pair of this.#pairs) {
      pair.client.resetAndDestroy();
      pair.upstream.resetAndDestroy();
    }
    this.#pairs.clear();
  }

  /** Closes the listener and every connection. */
  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolveClose) => this.#server.close(() => resolveClose()));
  }
}

import { createServer } from 'node:net';

const handedOut = new Set<number>();

/**
 * A loopback TCP port that was free a moment ago. The kernel picks it (port 0), so parallel
 * runs do not collide; ports handed out earlier in this process are never returned twice.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((resolvePort, reject) => {
      const server = createServer();
      server.unref();
      server.on('error', reject);
      server.listen({ host, port: 0, exclusive: true }, () => {
        const address = server.address();
        const p = typeof address === 'object' && address !== null ? address.port : 0;
        server.close(() => resolvePort(p));
      });
    });
    if (port !== 0 && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('freePort: no free loopback port after 50 attempts');
}

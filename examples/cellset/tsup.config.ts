import { defineConfig } from 'tsup';

/**
 * The production entry: `node dist/main.js` (no tsx, no pnpm in the process tree, so a signal
 * reaches the controller itself and its exit code is the process's). The workspace packages are
 * bundled from their sources (their `@reconcile-loop/source` export condition), so the entry needs
 * only the third-party dependencies at run time (client-node, prom-client, zod) and no prior build
 * of the packages.
 */
export default defineConfig({
  // The replica process of `--shards` (demo/shards.ts starts dist/shard-replica.js beside dist/main.js).
  entry: { main: 'demo/main.ts', 'shard-replica': 'demo/shard-replica.ts' },
  format: ['esm'],
  target: 'node22',
  platform: 'node',
  sourcemap: true,
  clean: true,
  splitting: false,
  dts: false,
  noExternal: [/^@reconcile-loop\//],
  esbuildOptions(options) {
    options.conditions = ['@reconcile-loop/source'];
  },
});

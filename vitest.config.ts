import { readdirSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

// Paths are read from this file's directory, so a package's own `pnpm test` (cwd = the package) works too.
const here = import.meta.dirname;

// The workspace develops against @kubernetes/client-node 2.x. RECONCILE_LOOP_CLIENT_NODE=1 runs the
// same sources and tests against 1.4.x (the root's `client-node-1` alias install) for the matrix's
// client-node 1.x cells: every import of the package, deep ones included, resolves to that copy, so no
// test needs to know which major it runs against.
const clientNodeMajor = process.env.RECONCILE_LOOP_CLIENT_NODE ?? '2';
if (clientNodeMajor !== '1' && clientNodeMajor !== '2') {
  throw new Error(`RECONCILE_LOOP_CLIENT_NODE must be 1 or 2, got ${JSON.stringify(clientNodeMajor)}`);
}
const alias =
  clientNodeMajor === '1'
    ? [{ find: /^@kubernetes\/client-node(?=\/|$)/, replacement: resolve(here, 'node_modules/client-node-1') }]
    : [];

// Workspace packages resolve each other through this export condition, so tests always run
// against sources and never against a stale dist/ (see tsconfig.base.json customConditions).
const conditions = ['@reconcile-loop/source', 'module', 'node', 'import', 'default'];

const packageProjects = readdirSync(join(here, 'packages'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, 'packages', d.name, 'package.json')))
  .map((d) => ({
    extends: true as const,
    test: {
      name: d.name,
      root: join(here, 'packages', d.name),
      include: ['test/**/*.test.ts'],
      // A package with type tests (test/*.test-d.ts) has them checked by tsc in the same run.
      ...(readdirSync(join(here, 'packages', d.name, 'test'), { recursive: true }).some((f) => String(f).endsWith('.test-d.ts'))
        ? { typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: 'tsconfig.json' } }
        : {}),
    },
  }));

export default defineConfig({
  resolve: { conditions, alias },
  ssr: { resolve: { conditions, externalConditions: ['@reconcile-loop/source'] } },
  test: {
    passWithNoTests: false,
    // The matrix runs two test processes on CI's two cores, so a test taking 2-3 s alone can take
    // twice that; a deadline is still a deadline (the e2e project sets its own, longer one).
    testTimeout: 20_000,
    restoreMocks: true,
    projects: [
      ...packageProjects,
      ...(existsSync(join(here, 'examples/pool-tracker/test'))
        ? [
            {
              extends: true as const,
              test: { name: 'examples', root: join(here, 'examples/pool-tracker'), include: ['test/**/*.test.ts'] },
            },
          ]
        : []),
      ...(existsSync(join(here, 'examples/cellset/test'))
        ? [
            {
              extends: true as const,
              test: { name: 'example-cellset', root: join(here, 'examples/cellset'), include: ['test/**/*.test.ts'] },
            },
          ]
        : []),
      ...(existsSync(join(here, 'examples/endpoints/test'))
        ? [
            {
              extends: true as const,
              test: { name: 'example-endpoints', root: join(here, 'examples/endpoints'), include: ['test/**/*.test.ts'] },
            },
          ]
        : []),
      // The repository's own tooling (scripts/*.mjs), each run against a fixture tree in a temp dir.
      // A test spawns the script several times, each loading the TypeScript compiler (2-5 s apiece
      // with every cell of the matrix running beside it), so the deadline is the e2e layer's.
      {
        extends: true as const,
        test: { name: 'scripts', root: join(here, 'scripts'), include: ['test/**/*.test.ts'], testTimeout: 120_000 },
      },
      {
        extends: true as const,
        test: { name: 'runtime-check', root: join(here, 'tools/runtime-check'), include: ['test/**/*.test.ts'] },
      },
      ...(existsSync(join(here, 'e2e/package.json'))
        ? [
            {
              extends: true as const,
              test: {
                name: 'e2e',
                root: join(here, 'e2e'),
                include: ['test/**/*.test.ts'],
                testTimeout: 120_000,
                hookTimeout: 900_000,
                fileParallelism: false,
              },
            },
          ]
        : []),
    ],
  },
});

import { readdirSync, existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve each other through this export condition, so tests always run
// against sources and never against a stale dist/ (see tsconfig.base.json customConditions).
const conditions = ['@reconcile-loop/source', 'module', 'node', 'import', 'default'];

const packageProjects = readdirSync('packages', { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(`packages/${d.name}/package.json`))
  .map((d) => ({
    extends: true as const,
    test: {
      name: d.name,
      root: `packages/${d.name}`,
      include: ['test/**/*.test.ts'],
    },
  }));

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@reconcile-loop/source'] } },
  test: {
    passWithNoTests: false,
    restoreMocks: true,
    projects: [
      ...packageProjects,
      ...(existsSync('examples/pool-tracker/test')
        ? [{ extends: true as const, test: { name: 'examples', root: 'examples/pool-tracker', include: ['test/**/*.test.ts'] } }]
        : []),
      ...(existsSync('e2e/package.json')
        ? [{ extends: true as const, test: { name: 'e2e', root: 'e2e', include: ['test/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 900_000, fileParallelism: false } }]
        : []),
    ],
  },
});

import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

// Several entries share one copy of each module (one class per error, one module state): split chunks.
export default defineConfig(
  packageConfig({
    entry: { index: 'src/index.ts', errors: 'src/errors-entry.ts', internal: 'src/internal.ts' },
    splitting: true,
  }),
);

import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

export default defineConfig(
  packageConfig({ entry: { index: 'src/index.ts', errors: 'src/errors-entry.ts', internal: 'src/internal.ts' } }),
);

import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

// Several entries share one copy of each module (one class per error, one module state): split chunks.
export default defineConfig(packageConfig({ entry: ['src/index.ts', 'src/internal.ts'], splitting: true }));

import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

export default defineConfig(packageConfig({ entry: ['src/index.ts', 'src/internal.ts'] }));

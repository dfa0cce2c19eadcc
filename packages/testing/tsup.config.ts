import { defineConfig } from 'tsup';
import { packageConfig } from '../../tsup.base';

// Two entries: the library, and the `reconcile-loop-apiserver` bin (dist/cli.js keeps its shebang).
export default defineConfig(packageConfig({ entry: ['src/index.ts', 'src/cli.ts'] }));

import type { Options } from 'tsup';

/**
 * One build shape for every package: dual ESM + CJS with declaration files for both,
 * so `import` and `require` consumers (including Jest without ESM mode) resolve typed entry points.
 */
export function packageConfig(overrides: Options = {}): Options {
  return {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
    ...overrides,
  };
}

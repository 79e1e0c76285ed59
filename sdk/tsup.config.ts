// ESM (.js) + CJS (.cjs) + declarations (.d.ts / .d.cts). What the SDK uses of the
// generated client under ../generated/client (its serializers and types) is bundled in:
// the package has no runtime dependencies.
import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: false,
  splitting: false,
  treeshake: true,
  minify: false,
  target: 'es2022',
  platform: 'neutral',
  tsconfig: 'tsconfig.json',
  outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.js' }),
});

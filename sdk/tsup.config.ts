// ESM (.js) + CJS (.cjs) + declarations (.d.ts / .d.cts). The generated client under
// ../generated/client is bundled in: the package has no runtime dependencies.
import { defineConfig, type Options } from 'tsup';

type EsbuildPlugin = NonNullable<Options['esbuildPlugins']>[number];

/**
 * The generated client builds `client.sse.*` with hey-api's `createSseClient`, which the SDK
 * never calls (streams go through `core/streaming.ts`), but tree-shaking cannot drop it
 * since it sits in the returned client object. This swaps that module for a stub in the
 * bundle only, without touching the generated files; the declarations are unaffected.
 */
const dropUnusedSseClient: EsbuildPlugin = {
  name: 'drop-unused-sse-client',
  setup(build) {
    build.onResolve({ filter: /\/core\/serverSentEvents\.gen(\.js)?$/ }, (args) =>
      /generated[\\/]client[\\/]client[\\/]client\.gen\.ts$/.test(args.importer) ? { path: args.path, namespace: 'unused-sse-client' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'unused-sse-client' }, () => ({
      contents: "export const createSseClient = () => { throw new Error('client.sse is not part of @inference-platform/sdk; stream with body.stream: true'); };",
      loader: 'js',
    }));
  },
};

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
  esbuildPlugins: [dropUnusedSseClient],
  outExtension: ({ format }) => ({ js: format === 'cjs' ? '.cjs' : '.js' }),
});

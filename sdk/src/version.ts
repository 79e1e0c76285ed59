/** Version of @inference-platform/sdk (kept equal to sdk/package.json by test/sdk/surface.test.ts). */
export const VERSION = '1.0.0';

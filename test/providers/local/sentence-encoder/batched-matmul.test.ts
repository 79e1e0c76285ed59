// The BatchMatMul kernel that hands XNNPACK one matrix of a batch at a time must give the
// WebAssembly backend's own results (to float rounding) for every case it takes, and leave
// the rest to that kernel.
import { createRequire } from 'node:module';
import { beforeAll, describe, expect, it } from 'vitest';
import { useXnnpackForBatches } from '../../../../server/providers/local/sentence-encoder/batched-matmul.js';
import type { Tfjs } from '../../../../server/providers/local/sentence-encoder/tfjs.js';

interface Ops {
  randomNormal(shape: number[], mean?: number, std?: number, dtype?: 'float32', seed?: number): { dispose(): void };
  matMul(a: unknown, b: unknown, transposeA?: boolean, transposeB?: boolean): { shape: number[]; dataSync(): Float32Array; dispose(): void };
  engine(): { backend: { numDataIds(): number } };
}
const tf = createRequire(import.meta.url)('@energetic-ai/core') as Tfjs & Ops;

// [a, b, transposeA, transposeB]: attention's shapes (texts × heads batches), transposes, and
// what goes to the original kernel (no batch, a batch of one, broadcasting).
const cases: [number[], number[], boolean, boolean][] = [
  [[2, 4, 16, 8], [2, 4, 16, 8], false, true],
  [[2, 4, 16, 16], [2, 4, 16, 8], false, false],
  [[3, 5, 7], [3, 7, 6], false, false],
  [[3, 7, 5], [3, 7, 6], true, false],
  [[3, 7, 5], [3, 6, 7], true, true],
  [[24, 12], [12, 9], false, false],
  [[1, 5, 7], [1, 7, 6], false, false],
  [[3, 5, 7], [1, 7, 6], false, false],
];

function products(): Float32Array[] {
  return cases.map(([a, b, transposeA, transposeB], i) => {
    const [x, y] = [tf.randomNormal(a, 0, 1, 'float32', 2 * i + 1), tf.randomNormal(b, 0, 1, 'float32', 2 * i + 2)];
    const product = tf.matMul(x, y, transposeA, transposeB);
    const values = product.dataSync().slice();
    for (const t of [x, y, product]) t.dispose();
    return values;
  });
}

describe('useXnnpackForBatches', () => {
  let expected: Float32Array[];
  let original: unknown;
  beforeAll(async () => {
    await tf.ready();
    expected = products();
    original = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
    useXnnpackForBatches(tf);
  });

  it('is the backend’s BatchMatMul from then on, once however often it is installed', () => {
    const installed = tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc;
    expect(installed).not.toBe(original);
    useXnnpackForBatches(tf);
    expect(tf.getKernel('BatchMatMul', 'wasm')!.kernelFunc).toBe(installed);
  });

  it('gives the original kernel’s products, batched or not, transposed or not', () => {
    const actual = products();
    actual.forEach((values, i) => {
      expect(values.length, `case ${i}`).toBe(expected[i].length);
      const error = Math.max(...values.map((v, j) => Math.abs(v - expected[i][j])));
      expect(error, `case ${i}`).toBeLessThan(1e-4);
    });
  });

  it('keeps the output shape and frees what it allocates', () => {
    const before = tf.engine().backend.numDataIds();
    const [x, y] = [tf.randomNormal([2, 3, 4, 5]), tf.randomNormal([2, 3, 6, 5])];
    const product = tf.matMul(x, y, false, true);
    expect(product.shape).toEqual([2, 3, 4, 6]);
    for (const t of [x, y, product]) t.dispose();
    expect(tf.engine().backend.numDataIds()).toBe(before);
  });
});

// The part of TensorFlow.js this folder uses, typed here: @energetic-ai/core bundles
// TensorFlow.js 4.5 (core, converter, WebAssembly backend) but its type declarations point at
// @tensorflow packages it does not install.

export interface TensorInfo {
  dataId: object;
  shape: number[];
  dtype: string;
}

export interface Tensor extends TensorInfo {
  data(): Promise<Float32Array>;
  dispose(): void;
}

/** The WebAssembly backend's own methods that a kernel uses (tfjs-backend-wasm's BackendWasm). */
export interface WasmBackend {
  makeOutput(shape: number[], dtype: 'float32'): TensorInfo;
  /** A view of the tensor's memory in the WebAssembly heap: valid until the heap grows. */
  typedArrayFromHeap(tensor: TensorInfo): Float32Array;
  disposeData(dataId: object): void;
}

export type KernelFunc = (args: { inputs: Record<string, TensorInfo>; backend: WasmBackend; attrs: Record<string, unknown> }) => TensorInfo;

export interface KernelConfig {
  kernelName: string;
  backendName: string;
  kernelFunc: KernelFunc;
  setupFunc?: unknown;
}

export interface GraphModel {
  executeAsync(inputs: Record<string, Tensor>): Promise<Tensor>;
  dispose(): void;
}

export interface Tfjs {
  ready(): Promise<void>;
  tensor1d(values: Int32Array, dtype: 'int32'): Tensor;
  tensor2d(values: Int32Array, shape: [number, number], dtype: 'int32'): Tensor;
  getKernel(kernelName: string, backendName: string): KernelConfig | undefined;
  registerKernel(config: KernelConfig): void;
  unregisterKernel(kernelName: string, backendName: string): void;
}

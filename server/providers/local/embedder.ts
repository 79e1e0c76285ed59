// The small interface every local embedder implements, plus the vector helpers they share.
// Any `dimensions` from 1 to the native size is served; larger values are refused. The
// neural model truncates its vector and re-normalises it (Matryoshka-style; it was not
// trained for that, so quality drops as dimensions shrink); the hashing embedder hashes
// into that many buckets directly.

export interface Embedder {
  /** What the vectors really come from; never a name of a model we do not run. */
  readonly model: string;
  readonly nativeDimensions: number;
  /** One L2-normalised vector per text, in input order. */
  embed(texts: string[], dimensions?: number): Promise<number[][]>;
  close?(): Promise<void>;
}

/** Whether `embed(texts, d)` can honour `d`, so the gateway can answer 400 up front. */
export function supportedDimensions(embedder: Embedder, d: number): boolean {
  return Number.isInteger(d) && d >= 1 && d <= embedder.nativeDimensions;
}

/** Scales to unit length in place; the zero vector (empty text) stays zero. */
export function normalize(vector: number[]): number[] {
  const length = Math.hypot(...vector);
  if (length > 0) for (let i = 0; i < vector.length; i++) vector[i] /= length;
  return vector;
}

/** The vector size to produce for a request; throws RangeError on an unsupported one. */
export function checkDimensions(embedder: Embedder, dimensions?: number): number {
  if (dimensions === undefined) return embedder.nativeDimensions;
  if (!supportedDimensions(embedder, dimensions)) {
    throw new RangeError(`${embedder.model} supports 1 to ${embedder.nativeDimensions} dimensions, not ${dimensions}`);
  }
  return dimensions;
}

/** Cuts a native vector to `dimensions` and re-normalises it. */
export function fitDimensions(embedder: Embedder, vector: number[], dimensions?: number): number[] {
  return normalize(vector.slice(0, checkDimensions(embedder, dimensions)));
}

// Helpers shared by the end-to-end gateway suites that talk to fake upstreams over HTTP.

/** A chat request naming `model`, with one user question. */
export const ask = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user', content: 'Tell me about the fox.' }], ...extra });

/** The JSON payloads of an SSE answer, its text, and whether it ended with [DONE]. */
export async function readStream(res: Response): Promise<{ chunks: any[]; done: boolean; text: string }> {
  const frames = (await res.text())
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => f.slice(6));
  const done = frames.at(-1) === '[DONE]';
  const chunks = frames.filter((f) => f !== '[DONE]').map((f) => JSON.parse(f));
  const text = chunks.flatMap((c) => (c.choices ?? []).map((choice: any) => choice.delta?.content ?? '')).join('');
  return { chunks, done, text };
}

/** The finish reasons a stream's chunks carried, in order. */
export const finishReasons = (chunks: any[]): string[] => chunks.filter((c) => c.choices?.[0]?.finish_reason).map((c) => c.choices[0].finish_reason);

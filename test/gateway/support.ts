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

/** Loopback, private and link-local hosts, as written plainly and in disguise. */
export const PRIVATE_URLS = [
  'https://127.0.0.1/cat.png',
  'https://2130706433/cat.png', // decimal
  'https://0x7f.1/cat.png', // hex, two parts
  'https://0x7f000001/cat.png',
  'https://0177.0.0.1/cat.png', // octal
  'https://017700000001/cat.png',
  'https://127.1/cat.png',
  'https://%31%32%37.0.0.1/cat.png', // percent-encoded
  'https://[::ffff:127.0.0.1]/cat.png', // IPv4-mapped IPv6
  'https://[0:0:0:0:0:ffff:7f00:1]/cat.png',
  'https://[::127.0.0.1]/cat.png', // IPv4-compatible
  'https://[64:ff9b::7f00:1]/cat.png', // NAT64
  'https://[::1]/cat.png',
  'https://[::]/cat.png',
  'https://0.0.0.0/cat.png',
  'https://0/cat.png',
  'https://localhost/cat.png',
  'https://LOCALHOST./cat.png',
  'https://images.localhost/cat.png',
  'https://metadata.google.internal/computeMetadata/v1/',
  'https://printer.local/cat.png',
  'https://169.254.169.254/latest/meta-data/',
  'https://10.1.2.3/cat.png',
  'https://172.16.0.1/cat.png',
  'https://172.31.255.255/cat.png',
  'https://192.168.1.1/cat.png',
  'https://100.64.0.1/cat.png',
  'https://[fe80::1]/cat.png',
  'https://[fd12:3456::1]/cat.png',
  'https://[::ffff:a9fe:a9fe]/cat.png', // 169.254.169.254, mapped
  'https://user:pass@127.0.0.1:8081/api/v1/keys',
];

/** Not https or a base64 data:image URL at all. */
export const BAD_SCHEMES = [
  'file:///etc/passwd',
  'gopher://127.0.0.1:6379/_FLUSHALL',
  'http://127.0.0.1:8081/api/v1/keys',
  'http://example.com/cat.png',
  'ftp://example.com/cat.png',
  'data:text/html,<script>alert(1)</script>',
  'data:image/png,not-base64',
  'javascript:alert(1)',
  '//example.com/cat.png',
  'cat.png',
];

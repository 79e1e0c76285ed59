// How figures read in the console: money from micros, counts, times, latencies.
/** Dollars from micros: cents, or every digit for an amount under a cent (a request can cost $0.000042). */
export const dollars = (micros: number) => `$${(micros / 1_000_000).toFixed(micros !== 0 && Math.abs(micros) < 10_000 ? 6 : 2)}`;
export const count = (n: number) => n.toLocaleString('en-US');
export const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(n < 10 ? 1 : 0)} ms`);
export const time = (epochMs: number) => new Date(epochMs).toISOString().replace('T', ' ').slice(0, 19);
export const shortTime = (epochMs: number, bucket: 'hour' | 'day' = 'hour') => {
  const iso = new Date(epochMs).toISOString();
  return bucket === 'day' ? iso.slice(5, 10) : `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
};
export const ago = (epochMs: number | null) => {
  if (epochMs === null) return 'never';
  const s = Math.round((Date.now() - epochMs) / 1000);
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
};

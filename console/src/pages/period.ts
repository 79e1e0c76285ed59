// The periods the overview and usage pages offer, and their picker.
import { html } from 'htm/preact';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export const PERIODS = {
  '24h': () => ({ since: Date.now() - DAY, bucket: 'hour' as const, label: 'Last 24 hours' }),
  '7d': () => ({ since: Date.now() - 7 * DAY, bucket: 'day' as const, label: 'Last 7 days' }),
  '30d': () => ({ since: Date.now() - 30 * DAY, bucket: 'day' as const, label: 'Last 30 days' }),
};
export type PeriodName = keyof typeof PERIODS;

const WIDTH = { hour: HOUR, day: DAY };

/** Every bucket's start in [since, until) (UTC-aligned), so that a chart shows quiet hours as zero, not as nothing. */
export function bucketStarts(since: number, until: number, bucket: 'hour' | 'day'): number[] {
  const starts: number[] = [];
  for (let start = Math.floor(since / WIDTH[bucket]) * WIDTH[bucket]; start < until; start += WIDTH[bucket]) starts.push(start);
  return starts;
}

export function PeriodPicker({ value, onChange }: { value: PeriodName; onChange: (p: PeriodName) => void }) {
  return html`<label class="inline">Period
    <select value=${value} onChange=${(e: Event) => onChange((e.target as HTMLSelectElement).value as PeriodName)}>
      ${(Object.keys(PERIODS) as PeriodName[]).map((p) => html`<option value=${p}>${PERIODS[p]().label}</option>`)}
    </select>
  </label>`;
}

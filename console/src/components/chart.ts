// A Chart.js chart as a Preact component: made once on its canvas, updated in place when
// its data change, destroyed with the component. Only the parts of Chart.js the console
// draws are registered (line and bar charts on category and linear axes).
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Filler,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';

Chart.register(LineController, LineElement, PointElement, BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend, Filler);

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
export const color = (i: number) => PALETTE[i % PALETTE.length];

export interface Series {
  label: string;
  /** null: no value (a gap in a line), as for the latency of an hour without requests. */
  values: (number | null)[];
  color?: string;
}

export function LineChart({ title, labels, series, kind = 'line', stacked = false }: { title: string; labels: string[]; series: Series[]; kind?: 'line' | 'bar'; stacked?: boolean }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);
  useEffect(() => {
    const config: ChartConfiguration = {
      type: kind,
      data: {
        labels,
        datasets: series.map((s, i) => ({
          label: s.label,
          data: s.values,
          borderColor: s.color ?? color(i),
          backgroundColor: kind === 'bar' ? (s.color ?? color(i)) : `${s.color ?? color(i)}33`,
          spanGaps: false,
          tension: 0.25,
          pointRadius: 3,
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: 'index', intersect: false },
        plugins: { legend: { position: 'bottom', labels: { boxWidth: 12 } } },
        scales: { x: { stacked }, y: { stacked, beginAtZero: true } },
      },
    };
    if (chart.current && (chart.current.config as { type?: string }).type === kind) {
      chart.current.data = config.data;
      chart.current.update();
    } else {
      chart.current?.destroy();
      chart.current = new Chart(canvas.current!, config);
    }
  }, [labels.join('|'), JSON.stringify(series), kind, stacked]);
  useEffect(() => () => chart.current?.destroy(), []);
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div class="chart-box"><canvas ref=${canvas} role="img" aria-label=${title}></canvas></div>
  </figure>`;
}

// A hand-written SVG time-series chart: lines per series, a few labelled ticks on both axes, and a
// legend. Enough for a PromQL range query; no chart library.
import type { PromMatrix } from './api.js';

export interface Series {
  label: string;
  points: [number, number][];
}

const W = 800;
const H = 260;
const PAD = { left: 56, right: 12, top: 12, bottom: 28 };
const COLOURS = 8;

export function seriesOf(matrix: PromMatrix): Series[] {
  return matrix.result.map((r) => {
    const { __name__: name, ...labels } = r.metric;
    const inner = Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(', ');
    return {
      label: `${name ?? ''}{${inner}}`,
      points: r.values
        .map(([t, v]) => [t, Number(v)] as [number, number])
        .filter(([, v]) => Number.isFinite(v)),
    };
  });
}

function ticks(min: number, max: number, count: number): number[] {
  if (min === max) return [min];
  return Array.from({ length: count }, (_, i) => min + ((max - min) * i) / (count - 1));
}

function fmt(v: number): string {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-2)) return v.toExponential(1);
  return Number(v.toFixed(a >= 100 ? 0 : 2)).toString();
}

export function Chart({
  title,
  series,
  start,
  end,
}: {
  title: string;
  series: Series[];
  start: number;
  end: number;
}) {
  const values = series.flatMap((s) => s.points.map(([, v]) => v));
  if (values.length === 0) return <p class="empty">No data in this range for {title}.</p>;
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const x = (t: number) => PAD.left + ((t - start) / Math.max(1, end - start)) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - (v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
  const shown = series.slice(0, 20);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: ${series.length} series`}>
        <g class="axis">
          {ticks(lo, hi, 5).map((v) => (
            <g key={`y${v}`}>
              <line x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} class="grid" />
              <text x={PAD.left - 6} y={y(v) + 4} text-anchor="end">
                {fmt(v)}
              </text>
            </g>
          ))}
          {ticks(start, end, 5).map((t) => (
            <text key={`x${t}`} x={x(t)} y={H - 8} text-anchor="middle">
              {new Date(t * 1000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
            </text>
          ))}
        </g>
        {shown.map((s, i) => (
          <polyline
            key={s.label}
            class={`line c${i % COLOURS}`}
            points={s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}
          />
        ))}
      </svg>
      <figcaption>
        <ul class="legend">
          {shown.map((s, i) => (
            <li key={s.label}>
              <span class={`swatch c${i % COLOURS}`} aria-hidden="true" />
              <code>{s.label}</code>
            </li>
          ))}
          {series.length > shown.length && <li>and {series.length - shown.length} more series</li>}
        </ul>
      </figcaption>
    </figure>
  );
}

// A hand-written SVG time-series chart: lines per series, a few labelled ticks on both axes, and a
// legend. Enough for a PromQL range query; no chart library.
import type { RefObject } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { PromMatrix } from './api.js';

export interface Series {
  label: string;
  points: [number, number][];
}

const H = 220;
const PAD = { left: 56, right: 16, top: 12, bottom: 28 };
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
  return Number(v.toPrecision(4)).toString();
}

/** The chart draws at its box's own width, so text keeps its size on a phone and in a grid cell. */
function useWidth(): [RefObject<HTMLElement | null>, number] {
  const ref = useRef<HTMLElement>(null);
  const [width, setWidth] = useState(600);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new ResizeObserver(([entry]) =>
      setWidth(Math.max(240, Math.round(entry.contentRect.width))),
    );
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
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
  const [ref, W] = useWidth();
  const values = series.flatMap((s) => s.points.map(([, v]) => v));
  if (values.length === 0)
    return (
      <figure class="chart" ref={ref}>
        <p class="empty">No data in this range for {title}.</p>
      </figure>
    );
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
    <figure class="chart" ref={ref}>
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
          {ticks(start, end, W < 480 ? 3 : 5).map((t) => (
            <text key={`x${t}`} x={x(t)} y={H - 8} text-anchor="middle">
              {new Date(t * 1000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
            </text>
          ))}
        </g>
        {shown.map((s, i) => {
          const last = s.points[s.points.length - 1];
          return (
            <g key={s.label} class={`c${i % COLOURS}`}>
              <polyline
                class="line"
                points={s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}
              />
              {/* The latest point, visible even when the series has only a few samples. */}
              {last && <circle class="dot" cx={x(last[0])} cy={y(last[1])} r={3} />}
            </g>
          );
        })}
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

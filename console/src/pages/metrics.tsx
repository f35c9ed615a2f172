import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Chart, seriesOf } from '../chart.js';
import { Empty, ProblemView, Section, Field } from '../components.js';
import { useApi } from '../hooks.js';
import { useLocation } from '../router.js';

const RANGES: [string, number][] = [
  ['15 minutes', 900],
  ['1 hour', 3600],
  ['6 hours', 21_600],
  ['24 hours', 86_400],
];

/** About 120 points across the range, never finer than 5 s. */
const stepFor = (range: number) => Math.max(5, Math.round(range / 120));

/** A PromQL range query over the last `range` seconds, re-run while the page is open. */
function RangeChart({ title, query, range }: { title: string; query: string; range: number }) {
  const result = useApi(
    async () => {
      const end = Math.floor(Date.now() / 1000);
      const start = end - range;
      return { start, end, matrix: await api.queryRange(query, start, end, stepFor(range)) };
    },
    [query, range],
    15_000,
  );
  return (
    <div class="chart-box" data-query={query}>
      <h3>{title}</h3>
      <ProblemView error={result.error} />
      {result.data && (
        <Chart
          title={title}
          series={seriesOf(result.data.matrix)}
          start={result.data.start}
          end={result.data.end}
        />
      )}
    </div>
  );
}

export function MetricsPage() {
  const { query: params } = useLocation();
  const [range, setRange] = useState(900);
  const [text, setText] = useState('up');
  const [query, setQuery] = useState<string | undefined>(undefined);
  const workers = useApi(() => api.workers({ limit: 200 }), [], 0);
  const stacks = useApi(() => api.stacks({ limit: 200 }), [], 0);
  const [worker, setWorker] = useState(params.get('worker') ?? '');
  const [stack, setStack] = useState(params.get('stack') ?? '');
  const workerId = worker || workers.data?.workers[0]?.id || '';
  const stackId = stack || stacks.data?.stacks[0]?.id || '';

  return (
    <>
      <h1>Metrics</h1>
      <Section title="Query">
        <form
          class="promql"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery(text.trim());
          }}
        >
          <Field id="metrics-promql-expression" label="PromQL expression" grow>
            <input
              id="metrics-promql-expression"
              name="promql"
              value={text}
              spellcheck={false}
              autocomplete="off"
              onInput={(e) => setText(e.currentTarget.value)}
            />
          </Field>
          <Field id="metrics-range" label="Range">
            <select
              id="metrics-range"
              value={range}
              onChange={(e) => setRange(Number(e.currentTarget.value))}
            >
              {RANGES.map(([label, seconds]) => (
                <option key={seconds} value={seconds}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" class="primary">
            Run query
          </button>
        </form>
        {query ? (
          <RangeChart title={query} query={query} range={range} />
        ) : (
          <p class="muted small">Runs against the built-in metric store (/prometheus/api/v1/query_range).</p>
        )}
      </Section>
      <Section
        title="Worker"
        actions={
          <Field id="metrics-worker" label="Worker" inline>
            <select id="metrics-worker" value={workerId} onChange={(e) => setWorker(e.currentTarget.value)}>
              {(workers.data?.workers ?? []).map((w) => (
                <option key={w.id} value={w.id}>
                  {w.name}
                </option>
              ))}
            </select>
          </Field>
        }
      >
        <ProblemView error={workers.error} />
        {workers.data && workers.data.workers.length === 0 && <Empty>No workers yet.</Empty>}
        {workerId && (
          <div class="charts">
            <RangeChart
              title="CPU %"
              query={`stack_node_cpu_percent{worker_id="${workerId}"}`}
              range={range}
            />
            <RangeChart
              title="Memory %"
              query={`stack_node_memory_percent{worker_id="${workerId}"}`}
              range={range}
            />
            <RangeChart
              title="Disk %"
              query={`stack_node_disk_percent{worker_id="${workerId}"}`}
              range={range}
            />
            <RangeChart
              title="Containers running"
              query={`stack_node_containers_running{worker_id="${workerId}"}`}
              range={range}
            />
          </div>
        )}
      </Section>
      <Section
        title="Stack"
        actions={
          <Field id="metrics-stack" label="Stack" inline>
            <select id="metrics-stack" value={stackId} onChange={(e) => setStack(e.currentTarget.value)}>
              {(stacks.data?.stacks ?? []).map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          </Field>
        }
      >
        <ProblemView error={stacks.error} />
        {stacks.data && stacks.data.stacks.length === 0 && <Empty>No stacks yet.</Empty>}
        {stackId && (
          <div class="charts">
            <RangeChart title="Services up" query={`stack_service_up{stack_id="${stackId}"}`} range={range} />
            <RangeChart
              title="Restarts"
              query={`stack_service_restarts{stack_id="${stackId}"}`}
              range={range}
            />
            <RangeChart
              title="Health check latency (s)"
              query={`stack_service_health_latency_seconds{stack_id="${stackId}"}`}
              range={range}
            />
          </div>
        )}
      </Section>
    </>
  );
}

import { useState } from 'preact/hooks';
import { api } from '../api.js';
import {
  Badge,
  ConfirmButton,
  Empty,
  Link,
  Loading,
  Meter,
  Pager,
  ProblemView,
  Section,
  ago,
  Field,
} from '../components.js';
import { useAction, useApi, usePager } from '../hooks.js';
import type { ConnectivityView, WorkerStatus, WorkerView } from '../../../src/contracts/api/index.js';

const FILTERS: ('' | WorkerStatus)[] = ['', 'pending', 'healthy', 'degraded', 'unhealthy', 'unreachable'];

export function WorkersPage() {
  const [status, setStatus] = useState<'' | WorkerStatus>('');
  const pager = usePager(status);
  const workers = useApi(
    () => api.workers({ status, cursor: pager.cursor, limit: 25 }),
    [status, pager.cursor],
  );
  const action = useAction();
  const act = (fn: () => Promise<unknown>) => void action.run(fn).then(workers.reload);

  return (
    <>
      <h1>Workers</h1>
      <Section
        title="Nodes"
        actions={
          <Field id="workers-status" label="Status" inline>
            <select
              id="workers-status"
              value={status}
              onChange={(e) => setStatus(e.currentTarget.value as '' | WorkerStatus)}
            >
              {FILTERS.map((f) => (
                <option key={f} value={f}>
                  {f || 'any'}
                </option>
              ))}
            </select>
          </Field>
        }
      >
        <ProblemView error={action.error} />
        <ProblemView error={workers.error} />
        <Loading when={workers.loading && !workers.data} />
        {workers.data && workers.data.workers.length === 0 && (
          <Empty>
            {status ? `No ${status} workers.` : 'No workers yet.'} An agent started with a join token shows up
            here (<Link to="/tunnel">install command</Link>).
          </Empty>
        )}
        {workers.data && workers.data.workers.length > 0 && (
          <div class="rows">
            {workers.data.workers.map((w) => (
              <WorkerRow
                key={w.id}
                worker={w}
                busy={action.busy}
                onApprove={() => act(() => api.approveWorker(w.id))}
                onDelete={() => act(() => api.deleteWorker(w.id))}
              />
            ))}
          </div>
        )}
        <Pager
          page={pager.page}
          nextCursor={workers.data?.next_cursor}
          onNext={pager.next}
          onPrevious={pager.previous}
        />
      </Section>
      <Connectivity />
    </>
  );
}

function WorkerRow({
  worker: w,
  busy,
  onApprove,
  onDelete,
}: {
  worker: WorkerView;
  busy: boolean;
  onApprove: () => void;
  onDelete: () => void;
}) {
  return (
    <article class="row" aria-label={`Worker ${w.name}`} data-worker={w.name}>
      <div class="row-main">
        <h3>
          {w.name} <Badge value={w.status} /> {w.connected ? <span class="muted">connected</span> : null}
        </h3>
        <p class="muted small">
          {w.hostname} {w.address && <>· {w.address}</>} · {w.os}/{w.arch} · {w.driver} driver · agent{' '}
          {w.version} · heartbeat {ago(w.last_heartbeat)}
        </p>
        {Object.keys(w.labels).length > 0 && (
          <p class="labels">
            {Object.entries(w.labels).map(([k, v]) => (
              <code key={k}>
                {k}={v}
              </code>
            ))}
          </p>
        )}
      </div>
      {w.metrics && (
        <div class="row-metrics">
          <Meter label="CPU" value={w.metrics.cpu_percent} />
          <Meter label="Memory" value={w.metrics.memory_percent} />
          <Meter label="Disk" value={w.metrics.disk_percent} />
          <span class="small">{w.metrics.containers_running} running</span>
        </div>
      )}
      <div class="actions">
        {w.status === 'pending' && (
          <button type="button" class="primary" disabled={busy} onClick={onApprove}>
            Approve {w.name}
          </button>
        )}
        <ConfirmButton
          label={`Delete ${w.name}`}
          question={`Delete worker ${w.name}? Its certificates are revoked and its agent is disconnected.`}
          confirm="Delete"
          disabled={busy}
          onConfirm={onDelete}
        />
      </div>
    </article>
  );
}

function Connectivity() {
  const matrix = useApi(() => api.connectivity(), [], 10_000);
  const workers = useApi(() => api.workers({ limit: 200 }), [], 10_000);
  const action = useAction();
  return (
    <Section
      title="Connectivity"
      actions={
        <button
          type="button"
          disabled={action.busy}
          onClick={() => void action.run(() => api.checkConnectivity()).then(matrix.reload)}
        >
          Check now
        </button>
      }
    >
      <ProblemView error={action.error ?? matrix.error} />
      {matrix.data && (
        <Matrix
          view={matrix.data}
          names={new Map((workers.data?.workers ?? []).map((w) => [w.id, w.name]))}
        />
      )}
    </Section>
  );
}

function Matrix({ view, names }: { view: ConnectivityView; names: Map<string, string> }) {
  if (view.workers.length < 2) return <Empty>Connectivity needs two workers or more.</Empty>;
  const link = new Map(view.links.map((l) => [`${l.from}→${l.to}`, l]));
  const name = (id: string) => names.get(id) ?? id.slice(0, 8);
  return (
    <div class="scroll">
      <table class="matrix">
        <caption class="muted small">Rows probe columns; round-trip time in ms.</caption>
        <thead>
          <tr>
            <th scope="col">from \ to</th>
            {view.workers.map((id) => (
              <th key={id} scope="col">
                {name(id)}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {view.workers.map((from) => (
            <tr key={from}>
              <th scope="row">{name(from)}</th>
              {view.workers.map((to) => {
                if (from === to)
                  return (
                    <td key={to} class="self">
                      —
                    </td>
                  );
                const l = link.get(`${from}→${to}`);
                if (!l)
                  return (
                    <td key={to} class="unknown">
                      ?
                    </td>
                  );
                return (
                  <td key={to} class={l.reachable ? 'up' : 'down'} title={`checked ${ago(l.checked_at)}`}>
                    {l.reachable ? `${l.rtt_ms ?? '?'} ms` : 'unreachable'}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

import { api } from '../api.js';
import { Badge, Empty, Link, Loading, ProblemView, Section, ago, TableHead } from '../components.js';
import { useApi } from '../hooks.js';
import { StackTable } from './stacks.js';
import type { WorkerStatus } from '../../../src/contracts/api/index.js';

const WORKER_STATUSES: WorkerStatus[] = ['healthy', 'degraded', 'unhealthy', 'unreachable', 'pending'];

/** Every worker of the caller, page by page (the counts need them all). */
async function allWorkers() {
  const workers = [];
  let cursor: string | undefined;
  do {
    const page = await api.workers({ limit: 200, cursor });
    workers.push(...page.workers);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && workers.length < 10_000);
  return workers;
}

export function OverviewPage() {
  const health = useApi(() => api.health(), []);
  const workers = useApi(allWorkers, []);
  const stacks = useApi(() => api.stacks({ limit: 10 }), []);
  const jobs = useApi(() => api.jobs({ limit: 8 }), []);
  const tunnel = useApi(() => api.tunnelStatus(), []);
  const counts = new Map<WorkerStatus, number>();
  for (const w of workers.data ?? []) counts.set(w.status, (counts.get(w.status) ?? 0) + 1);

  return (
    <>
      <h1>Overview</h1>
      <div class="grid">
        <Section title="Service health">
          <ProblemView error={health.error} />
          <Loading when={health.loading && !health.data} />
          {health.data && (
            <>
              <p>
                <Badge value={health.data.status} /> version {health.data.version}, up {health.data.uptime}
              </p>
              <dl class="kv">
                {Object.entries(health.data.checks).map(([name, state]) => (
                  <div key={name}>
                    <dt>{name}</dt>
                    <dd>
                      <Badge value={state} />
                    </dd>
                  </div>
                ))}
              </dl>
            </>
          )}
        </Section>
        <Section title="Workers" actions={<Link to="/workers">All workers</Link>}>
          <ProblemView error={workers.error} />
          <Loading when={workers.loading && !workers.data} />
          {workers.data && workers.data.length === 0 && (
            <Empty>
              No workers yet. Start an agent with a join token (<Link to="/tunnel">install command</Link>).
            </Empty>
          )}
          {workers.data && workers.data.length > 0 && (
            <ul class="counts" aria-label="Workers by status">
              {WORKER_STATUSES.map((s) => (
                <li key={s} data-status={s}>
                  <span class="count">{counts.get(s) ?? 0}</span> <Badge value={s} />
                </li>
              ))}
            </ul>
          )}
        </Section>
        <Section title="Tunnel" actions={<Link to="/tunnel">Tunnel</Link>}>
          <ProblemView error={tunnel.error} />
          {tunnel.data && (
            <p>
              <Badge value={tunnel.data.state} /> {tunnel.data.provider}
              {tunnel.data.public_url && (
                <>
                  {' '}
                  at <code>{tunnel.data.public_url}</code>
                </>
              )}
              {tunnel.data.last_error && <span class="error-text"> {tunnel.data.last_error}</span>}
            </p>
          )}
        </Section>
      </div>
      <Section title="Stacks" actions={<Link to="/stacks">All stacks</Link>}>
        <ProblemView error={stacks.error} />
        {stacks.data && stacks.data.stacks.length === 0 && (
          <Empty>
            No stacks yet. <Link to="/stacks/new">Create one</Link>.
          </Empty>
        )}
        {stacks.data && stacks.data.stacks.length > 0 && <StackTable stacks={stacks.data.stacks} />}
      </Section>
      <Section title="Recent jobs" actions={<Link to="/jobs">All jobs</Link>}>
        <ProblemView error={jobs.error} />
        {jobs.data && jobs.data.jobs.length === 0 && <Empty>No jobs yet: deploying a stack makes one.</Empty>}
        {jobs.data && jobs.data.jobs.length > 0 && <JobTable jobs={jobs.data.jobs} />}
      </Section>
    </>
  );
}

export function JobTable({ jobs }: { jobs: import('../../../src/contracts/api/index.js').JobView[] }) {
  return (
    <table>
      <TableHead columns={['Job', 'Type', 'Stack', 'Status', 'Progress', 'Created']} />
      <tbody>
        {jobs.map((j) => (
          <tr key={j.id}>
            <td>
              <Link to={`/jobs/${j.id}`}>
                <code>{j.id.slice(0, 8)}</code>
              </Link>
            </td>
            <td>{j.type}</td>
            <td>
              <Link to={`/stacks/${j.stack_id}`}>{j.stack_name}</Link> r{j.revision}
            </td>
            <td>
              <Badge value={j.status} />
            </td>
            <td>{j.progress}%</td>
            <td>{ago(j.created_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

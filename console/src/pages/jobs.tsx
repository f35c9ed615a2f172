import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import {
  Badge,
  ConfirmButton,
  Empty,
  Link,
  Loading,
  Pager,
  ProblemView,
  Section,
  time,
  TableHead,
  Field,
} from '../components.js';
import { POLL_MS, asApiError, useAction, useApi, usePager } from '../hooks.js';
import { navigate, useLocation } from '../router.js';
import { JobTable } from './overview.js';
import type { JobLogLine, JobStatus, JobType } from '../../../src/contracts/api/index.js';
import type { ApiError } from '../api.js';

const STATUSES: ('' | JobStatus)[] = [
  '',
  'queued',
  'dispatched',
  'running',
  'succeeded',
  'failed',
  'cancelling',
  'cancelled',
];
const TYPES: ('' | JobType)[] = ['', 'provision', 'destroy'];
const ENDED: JobStatus[] = ['succeeded', 'failed', 'cancelled'];

export function JobsPage() {
  const { query } = useLocation();
  const status = (query.get('status') ?? '') as '' | JobStatus;
  const type = (query.get('type') ?? '') as '' | JobType;
  const stackId = query.get('stack_id') ?? '';
  const filterKey = `${status}|${type}|${stackId}`;
  const pager = usePager(filterKey);
  const jobs = useApi(
    () =>
      api.jobs({
        status: status || undefined,
        type: type || undefined,
        stack_id: stackId || undefined,
        cursor: pager.cursor,
        limit: 25,
      }),
    [filterKey, pager.cursor],
  );
  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value) next.set(key, value);
    else next.delete(key);
    const qs = next.toString();
    navigate(`/jobs${qs ? `?${qs}` : ''}`, true);
  };
  return (
    <>
      <h1>Jobs</h1>
      <Section title="All jobs">
        <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filters">
          <Field id="jobs-status" label="Status" inline>
            <select
              id="jobs-status"
              value={status}
              onChange={(e) => setFilter('status', e.currentTarget.value)}
            >
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s || 'any'}
                </option>
              ))}
            </select>
          </Field>
          <Field id="jobs-type" label="Type" inline>
            <select id="jobs-type" value={type} onChange={(e) => setFilter('type', e.currentTarget.value)}>
              {TYPES.map((s) => (
                <option key={s} value={s}>
                  {s || 'any'}
                </option>
              ))}
            </select>
          </Field>
          <Field id="jobs-stack-id" label="Stack id" inline>
            <input
              id="jobs-stack-id"
              value={stackId}
              size={12}
              onChange={(e) => setFilter('stack_id', e.currentTarget.value.trim())}
            />
          </Field>
        </form>
        <ProblemView error={jobs.error} />
        <Loading when={jobs.loading && !jobs.data} />
        {jobs.data && jobs.data.jobs.length === 0 && <Empty>No jobs match.</Empty>}
        {jobs.data && jobs.data.jobs.length > 0 && <JobTable jobs={jobs.data.jobs} />}
        <Pager
          page={pager.page}
          nextCursor={jobs.data?.next_cursor}
          onNext={pager.next}
          onPrevious={pager.previous}
        />
      </Section>
    </>
  );
}

/** The job's output, page after page, until the service says every line was sent. */
function useJobOutput(id: string): { lines: JobLogLine[]; complete: boolean; error: ApiError | undefined } {
  const [lines, setLines] = useState<JobLogLine[]>([]);
  const [complete, setComplete] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  useEffect(() => {
    let live = true;
    let after = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLines([]);
    setComplete(false);
    const step = async () => {
      try {
        const page = await api.jobLogs(id, after);
        if (!live) return;
        after = page.next_after;
        if (page.lines.length > 0) setLines((l) => [...l, ...page.lines]);
        setError(undefined);
        if (page.complete) {
          setComplete(true);
          return;
        }
        // A full page means more is waiting: ask again at once.
        timer = setTimeout(() => void step(), page.lines.length >= 1000 ? 0 : POLL_MS / 2);
      } catch (err) {
        if (!live) return;
        setError(asApiError(err));
        timer = setTimeout(() => void step(), POLL_MS);
      }
    };
    void step();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id]);
  return { lines, complete, error };
}

export function JobPage({ id }: { id: string }) {
  const job = useApi(() => api.job(id), [id]);
  const output = useJobOutput(id);
  const action = useAction();
  const [follow, setFollow] = useState(true);
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [output.lines.length, follow]);
  const j = job.data;
  const ended = j ? ENDED.includes(j.status) : false;

  return (
    <>
      <h1>Job {id.slice(0, 8)}</h1>
      <ProblemView error={job.error} />
      <ProblemView error={action.error} />
      {j && (
        <Section
          title={`${j.type} of ${j.stack_name} r${j.revision}`}
          actions={
            <>
              <ConfirmButton
                label="Cancel job"
                question="Cancel this job? The agent stops it and puts the stack back."
                confirm="Cancel job"
                disabled={ended || j.status === 'cancelling' || action.busy}
                onConfirm={() => void action.run(() => api.cancelJob(id)).then(job.reload)}
              />
              <ConfirmButton
                label="Clean up"
                question="Mark this job failed and tell its worker to stop it and restore the stack?"
                confirm="Clean up"
                disabled={ended || action.busy}
                onConfirm={() => void action.run(() => api.cleanupJob(id)).then(job.reload)}
              />
            </>
          }
        >
          <p>
            <Badge value={j.status} /> <progress max={100} value={j.progress} aria-label="Progress" />{' '}
            {j.progress}%
          </p>
          <dl class="kv">
            <div>
              <dt>Stack</dt>
              <dd>
                <Link to={`/stacks/${j.stack_id}`}>{j.stack_name}</Link>
              </dd>
            </div>
            <div>
              <dt>Worker</dt>
              <dd>{j.worker_id ? <code>{j.worker_id}</code> : 'not placed yet'}</dd>
            </div>
            <div>
              <dt>Attempts</dt>
              <dd>
                {j.attempts} of {j.max_attempts}
              </dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{time(j.created_at)}</dd>
            </div>
            <div>
              <dt>Finished</dt>
              <dd>{time(j.finished_at)}</dd>
            </div>
          </dl>
          {j.error && (
            <p class="problem" role="alert">
              {j.error}
            </p>
          )}
          {j.results && j.results.length > 0 && (
            <table>
              <TableHead columns={['Service', 'Action', 'Result']} />
              <tbody>
                {j.results.map((r) => (
                  <tr key={r.name}>
                    <td>{r.name}</td>
                    <td>{r.action}</td>
                    <td>{r.ok ? <Badge value="ok" /> : <span class="error-text">{r.error}</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      )}
      <Section
        title="Output"
        actions={
          <label class="inline">
            <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />{' '}
            Follow
          </label>
        }
      >
        <ProblemView error={output.error} />
        <pre class="log" ref={pre} tabIndex={0} aria-label="Job output" data-complete={output.complete}>
          {output.lines.map((l, i) => (
            <div key={i}>
              <span class="muted">{new Date(l.time).toLocaleTimeString()}</span> {l.line}
            </div>
          ))}
        </pre>
        <p class="muted small" aria-live="polite">
          {output.complete ? `End of output (${output.lines.length} lines).` : 'Following…'}
        </p>
      </Section>
    </>
  );
}

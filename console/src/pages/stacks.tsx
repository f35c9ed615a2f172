import { useEffect, useState } from 'preact/hooks';
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
  ago,
  time,
  TableHead,
  Field,
} from '../components.js';
import { diffLines } from '../diff.js';
import { useAction, useApi, usePager } from '../hooks.js';
import { navigate } from '../router.js';
import { YamlEditor } from '../yaml-editor.js';
import type { StackView } from '../../../src/contracts/api/index.js';

const EXAMPLE = `name: my-stack
stackkit: basement-kit
variant: default
services:
  web:
    command: ["/usr/bin/python3", "-m", "http.server", "8080"]
`;

export function StacksPage() {
  const pager = usePager(0);
  const stacks = useApi(() => api.stacks({ cursor: pager.cursor, limit: 25 }), [pager.cursor]);
  return (
    <>
      <h1>Stacks</h1>
      <Section
        title="All stacks"
        actions={
          <Link to="/stacks/new" class="button primary">
            New stack
          </Link>
        }
      >
        <ProblemView error={stacks.error} />
        <Loading when={stacks.loading && !stacks.data} />
        {stacks.data && stacks.data.stacks.length === 0 && (
          <Empty>No stacks yet: create one from a YAML file.</Empty>
        )}
        {stacks.data && stacks.data.stacks.length > 0 && <StackTable stacks={stacks.data.stacks} full />}
        <Pager
          page={pager.page}
          nextCursor={stacks.data?.next_cursor}
          onNext={pager.next}
          onPrevious={pager.previous}
        />
      </Section>
    </>
  );
}

/** Stacks as rows; `full` adds the kit and the services (the overview shows fewer columns). */
export function StackTable({ stacks, full = false }: { stacks: StackView[]; full?: boolean }) {
  return (
    <table>
      <TableHead
        columns={
          full
            ? ['Name', 'Status', 'Kit', 'Revision', 'Services', 'Updated']
            : ['Name', 'Status', 'Revision', 'Updated']
        }
      />
      <tbody>
        {stacks.map((s) => (
          <tr key={s.id}>
            <td>
              <Link to={`/stacks/${s.id}`}>{s.name}</Link>
            </td>
            <td>
              <Badge value={s.status} />
            </td>
            {full && (
              <td>
                {s.stackkit}/{s.variant}
              </td>
            )}
            <td>
              {s.revision}
              {s.deployed_revision !== null &&
                s.deployed_revision !== s.revision &&
                ` (deployed ${s.deployed_revision})`}
            </td>
            {full && <td>{s.services.join(', ')}</td>}
            <td>{ago(s.updated_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function RevisionSelect({
  id,
  label,
  value,
  revisions,
  onChange,
}: {
  id: string;
  label: string;
  value: number;
  revisions: { revision: number }[];
  onChange: (revision: number) => void;
}) {
  return (
    <Field id={id} label={label} inline>
      <select id={id} value={value} onChange={(e) => onChange(Number(e.currentTarget.value))}>
        {revisions.map((r) => (
          <option key={r.revision} value={r.revision}>
            r{r.revision}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function NewStackPage() {
  const [source, setSource] = useState(EXAMPLE);
  const action = useAction();
  return (
    <>
      <h1>New stack</h1>
      <Section title="Definition">
        <p class="muted small">
          The file is checked as you type; click a position to jump there. See docs/stack-definitions.md.
        </p>
        <YamlEditor label="Stack definition (YAML)" value={source} onInput={setSource} />
        <ProblemView error={action.error} />
        <div class="actions">
          <button
            type="button"
            class="primary"
            disabled={action.busy}
            onClick={() =>
              void action
                .run(() => api.createStack(source))
                .then((stack) => stack && navigate(`/stacks/${stack.id}`))
            }
          >
            Create stack
          </button>
        </div>
      </Section>
    </>
  );
}

export function StackPage({ id }: { id: string }) {
  const stack = useApi(() => api.stack(id), [id]);
  const health = useApi(() => api.stackHealth(id), [id]);
  const action = useAction();
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const s = stack.data;

  const deploy = () =>
    void action.run(() => api.deployStack(id)).then((job) => job && navigate(`/jobs/${job.id}`));
  const destroy = () =>
    void action.run(() => api.destroyStack(id)).then((job) => job && navigate(`/jobs/${job.id}`));
  const edit = async () => {
    if (!s) return;
    const rev = await action.run(() => api.revision(id, s.revision));
    if (rev) setEditing(rev.source);
  };
  const save = () =>
    void action
      .run(() => api.updateStack(id, editing ?? ''))
      .then((updated) => {
        if (!updated) return;
        setEditing(undefined);
        stack.reload();
      });

  return (
    <>
      <h1>Stack {s?.name ?? ''}</h1>
      <ProblemView error={stack.error} />
      <ProblemView error={action.error} />
      {s && (
        <Section
          title="Stack"
          actions={
            <>
              <button
                type="button"
                class="primary"
                disabled={action.busy || editing !== undefined}
                onClick={deploy}
              >
                Deploy revision {s.revision}
              </button>
              <button
                type="button"
                disabled={action.busy || editing !== undefined}
                onClick={() => void edit()}
              >
                Edit
              </button>
              <ConfirmButton
                label="Destroy"
                question={`Destroy stack ${s.name}? Its services are stopped and removed from their worker.`}
                confirm="Destroy"
                disabled={action.busy}
                onConfirm={destroy}
              />
            </>
          }
        >
          <dl class="kv">
            <div>
              <dt>Status</dt>
              <dd>
                <Badge value={s.status} />
              </dd>
            </div>
            <div>
              <dt>Kit</dt>
              <dd>
                {s.stackkit}/{s.variant}
              </dd>
            </div>
            <div>
              <dt>Revision</dt>
              <dd>
                {s.revision} (deployed {s.deployed_revision ?? 'never'})
              </dd>
            </div>
            <div>
              <dt>Worker</dt>
              <dd>{s.worker_id ? <code>{s.worker_id}</code> : 'none yet'}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{time(s.updated_at)}</dd>
            </div>
          </dl>
          <p>
            <Link to={`/jobs?stack_id=${s.id}`}>Jobs of this stack</Link> ·{' '}
            <Link to={`/drift?stack=${s.id}`}>Drift</Link> ·{' '}
            <Link to={`/metrics?stack=${s.id}`}>Metrics</Link>
          </p>
        </Section>
      )}
      {editing !== undefined && (
        <Section title={`Edit (new revision after ${s?.revision ?? ''})`}>
          <YamlEditor label="Stack definition (YAML)" value={editing} onInput={setEditing} />
          <div class="actions">
            <button type="button" class="primary" disabled={action.busy} onClick={save}>
              Save revision
            </button>
            <button type="button" onClick={() => setEditing(undefined)}>
              Cancel
            </button>
          </div>
        </Section>
      )}
      <Section title="Service health">
        <ProblemView error={health.error} />
        {health.data && (
          <>
            <p>
              Overall <Badge value={health.data.overall} />{' '}
              <span class="muted small">reported {ago(health.data.reported_at)}</span>
            </p>
            {health.data.services.length === 0 ? (
              <Empty>No state reported yet: deploy the stack first.</Empty>
            ) : (
              <table>
                <TableHead columns={['Service', 'Status', 'Uptime', 'Health check']} />
                <tbody>
                  {health.data.services.map((svc) => (
                    <tr key={svc.name} data-service={svc.name}>
                      <td>{svc.name}</td>
                      <td>
                        <Badge value={svc.status} />
                      </td>
                      <td>{svc.uptime}</td>
                      <td>
                        {svc.health_check
                          ? `${svc.health_check.status_code} in ${svc.health_check.latency_ms} ms (${svc.health_check.url})`
                          : '—'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Section>
      {s && <Revisions id={id} current={s.revision} />}
    </>
  );
}

function Revisions({ id, current }: { id: string; current: number }) {
  const list = useApi(() => api.revisions(id), [id, current], 0);
  const [from, setFrom] = useState(Math.max(1, current - 1));
  const [to, setTo] = useState(current);
  useEffect(() => {
    setFrom(Math.max(1, current - 1));
    setTo(current);
  }, [current]);
  const diff = useApi(
    async () => {
      const [a, b] = await Promise.all([api.revision(id, from), api.revision(id, to)]);
      return diffLines(a.source, b.source);
    },
    [id, from, to],
    0,
  );
  const revisions = list.data?.revisions ?? [];
  return (
    <Section title="Revisions">
      <ProblemView error={list.error} />
      <ul class="revisions">
        {revisions.map((r) => (
          <li key={r.revision}>
            r{r.revision} {time(r.created_at)} by <code>{r.created_by}</code>
            {r.current && <Badge value="current" />} {r.deployed && <Badge value="deployed" />}
          </li>
        ))}
      </ul>
      {revisions.length > 1 && (
        <>
          <div class="actions">
            <RevisionSelect
              id="stacks-compare"
              label="Compare"
              value={from}
              revisions={revisions}
              onChange={setFrom}
            />
            <RevisionSelect id="stacks-with" label="with" value={to} revisions={revisions} onChange={setTo} />
          </div>
          <ProblemView error={diff.error} />
          {diff.data && (
            <pre class="diff" aria-label={`Changes from r${from} to r${to}`}>
              {diff.data.map((l, i) => (
                <div key={i} class={`d-${l.kind}`}>
                  {l.kind === 'added' ? '+ ' : l.kind === 'removed' ? '- ' : '  '}
                  {l.text}
                </div>
              ))}
            </pre>
          )}
        </>
      )}
    </Section>
  );
}

import { api } from '../api.js';
import { Badge, Empty, Link, Loading, Pager, ProblemView, Section, ago, TableHead } from '../components.js';
import { useAction, useApi, usePager } from '../hooks.js';
import { navigate, useLocation } from '../router.js';
import type { DriftView, StackView } from '../../../src/contracts/api/index.js';

export function DriftPage() {
  const { query } = useLocation();
  const only = query.get('stack') ?? '';
  const pager = usePager(only);
  const page = useApi(async () => {
    const list = only
      ? { stacks: [await api.stack(only)], next_cursor: null }
      : await api.stacks({ cursor: pager.cursor, limit: 20 });
    const views = await Promise.all(list.stacks.map((s) => api.drift(s.id)));
    return { stacks: list.stacks, views, next: list.next_cursor };
  }, [only, pager.cursor]);

  return (
    <>
      <h1>Drift</h1>
      {only && (
        <p>
          One stack shown. <Link to="/drift">All stacks</Link>
        </p>
      )}
      <ProblemView error={page.error} />
      <Loading when={page.loading && !page.data} />
      {page.data && page.data.stacks.length === 0 && (
        <Empty>No stacks: drift compares a deployed stack with what runs on its worker.</Empty>
      )}
      {page.data?.stacks.map((s, i) => (
        <StackDrift key={s.id} stack={s} view={page.data!.views[i]} onChange={page.reload} />
      ))}
      <Pager page={pager.page} nextCursor={page.data?.next} onNext={pager.next} onPrevious={pager.previous} />
    </>
  );
}

function StackDrift({ stack, view, onChange }: { stack: StackView; view: DriftView; onChange: () => void }) {
  const action = useAction();
  const live = view.items.filter((i) => !i.ignored);
  return (
    <Section
      title={`Drift of ${stack.name}`}
      actions={
        <button
          type="button"
          class="primary"
          disabled={action.busy || live.length === 0}
          onClick={() =>
            void action
              .run(() => api.resolveDrift(stack.id))
              .then((r) => {
                onChange();
                if (r) navigate(`/jobs/${r.job_id}`);
              })
          }
        >
          Resolve {stack.name}
        </button>
      }
    >
      <p>
        <Badge value={view.status} /> <span class="muted small">checked {ago(view.checked_at)}</span> ·{' '}
        <Link to={`/stacks/${stack.id}`}>stack</Link>
      </p>
      <ProblemView error={action.error} />
      {view.items.length === 0 ? (
        <Empty>{view.status === 'in_sync' ? 'In sync: nothing differs.' : 'No drift items.'}</Empty>
      ) : (
        <div class="scroll">
          <table>
            <TableHead
              columns={['Service', 'Kind', 'Field', 'Desired', 'Actual', 'Since', { hidden: 'Actions' }]}
            />
            <tbody>
              {view.items.map((item) => (
                <tr
                  key={`${item.resource}/${item.kind}/${item.field ?? ''}`}
                  class={item.ignored ? 'ignored' : undefined}
                >
                  <td>{item.resource}</td>
                  <td>
                    <Badge value={item.kind} />
                  </td>
                  <td>{item.field ?? '—'}</td>
                  <td>
                    <code>{item.desired ?? '—'}</code>
                  </td>
                  <td>
                    <code>{item.actual ?? '—'}</code>
                  </td>
                  <td>{ago(item.detected_at)}</td>
                  <td>
                    <button
                      type="button"
                      disabled={action.busy}
                      onClick={() =>
                        void action
                          .run(() => api.ignoreDrift(stack.id, [item.resource], !item.ignored))
                          .then(onChange)
                      }
                    >
                      {item.ignored ? `Stop ignoring ${item.resource}` : `Ignore ${item.resource}`}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {view.ignored_resources.length > 0 && (
        <p class="small">
          Ignored: {view.ignored_resources.join(', ')}{' '}
          <button
            type="button"
            class="link"
            onClick={() =>
              void action.run(() => api.ignoreDrift(stack.id, view.ignored_resources, false)).then(onChange)
            }
          >
            stop ignoring all
          </button>
        </p>
      )}
    </Section>
  );
}

import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Badge, Empty, Loading, Pager, ProblemView, Section, time, TableHead, Field } from '../components.js';
import { useApi, usePager } from '../hooks.js';

export function AuditPage() {
  const [action, setAction] = useState('');
  const [text, setText] = useState('');
  const pager = usePager(action);
  const events = useApi(
    () => api.audit({ action: action || undefined, cursor: pager.cursor, limit: 50 }),
    [action, pager.cursor],
  );
  return (
    <>
      <h1>Audit trail</h1>
      <Section title="Events, newest first">
        <form
          class="filters"
          onSubmit={(e) => {
            e.preventDefault();
            setAction(text.trim());
          }}
        >
          <Field id="audit-action" label="Action" inline>
            <input
              id="audit-action"
              value={text}
              placeholder="stack.revised"
              onInput={(e) => setText(e.currentTarget.value)}
            />
          </Field>
          <button type="submit">Filter</button>
        </form>
        <ProblemView error={events.error} />
        <Loading when={events.loading && !events.data} />
        {events.data && events.data.events.length === 0 && (
          <Empty>No events{action ? ` for ${action}` : ''}.</Empty>
        )}
        {events.data && events.data.events.length > 0 && (
          <div class="scroll">
            <table>
              <TableHead columns={['When', 'Action', 'Outcome', 'Actor', 'Target', 'Details']} />
              <tbody>
                {events.data.events.map((e) => (
                  <tr key={e.id}>
                    <td>{time(e.at)}</td>
                    <td>
                      <code>{e.action}</code>
                    </td>
                    <td>
                      <Badge value={e.outcome} />
                    </td>
                    <td>{e.actor ?? '—'}</td>
                    <td>{e.target ?? '—'}</td>
                    <td>
                      <code class="small">
                        {Object.keys(e.details).length ? JSON.stringify(e.details) : ''}
                      </code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <Pager
          page={pager.page}
          nextCursor={events.data?.next_cursor}
          onNext={pager.next}
          onPrevious={pager.previous}
        />
      </Section>
    </>
  );
}

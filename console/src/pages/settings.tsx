import { useEffect, useState } from 'preact/hooks';
import { api, session } from '../api.js';
import { Loading, ProblemView, Section, time, Field } from '../components.js';
import { useAction, useApi } from '../hooks.js';
import type { LogLevel } from '../../../src/contracts/api/index.js';

const LEVELS: LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

export function SettingsPage() {
  const settings = useApi(() => api.settings(), [], 10_000);
  const [level, setLevel] = useState<LogLevel | undefined>(undefined);
  const action = useAction();
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (level === undefined && settings.data) setLevel(settings.data.log_level);
  }, [settings.data, level]);
  const id = session.identity;
  return (
    <>
      <h1>Settings</h1>
      <Section title="Log level">
        <ProblemView error={settings.error} />
        <Loading when={settings.loading && !settings.data} />
        {settings.data && (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              setSaved(false);
              void action
                .run(() => api.updateSettings({ log_level: level }))
                .then((r) => {
                  if (r) {
                    setSaved(true);
                    settings.reload();
                  }
                });
            }}
          >
            <p class="muted small">
              Applies at once on every replica. Now <strong>{settings.data.log_level}</strong>
              {settings.data.updated_at
                ? `, set ${time(settings.data.updated_at)}`
                : ' (the configured default)'}
              .
            </p>
            <Field id="settings-level" label="Level">
              <select
                id="settings-level"
                value={level}
                onChange={(e) => setLevel(e.currentTarget.value as LogLevel)}
              >
                {LEVELS.map((l) => (
                  <option key={l} value={l}>
                    {l}
                  </option>
                ))}
              </select>
            </Field>
            <ProblemView error={action.error} />
            <div class="actions">
              <button type="submit" class="primary" disabled={action.busy}>
                Save
              </button>
              {saved && <span role="status">Saved.</span>}
            </div>
          </form>
        )}
      </Section>
      <Section title="This session">
        <dl class="kv">
          <div>
            <dt>Client</dt>
            <dd>
              <code>{id?.clientId}</code>
            </dd>
          </div>
          <div>
            <dt>Owner</dt>
            <dd>{id?.owner}</dd>
          </div>
          <div>
            <dt>Scopes</dt>
            <dd>{id?.scopes.join(' ')}</dd>
          </div>
        </dl>
      </Section>
    </>
  );
}

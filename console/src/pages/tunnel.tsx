import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Badge, CopyButton, Empty, ProblemView, Section, time } from '../components.js';
import { useAction, useApi } from '../hooks.js';
import type { InstallCommand, TunnelSubdomainServices } from '../../../src/contracts/api/index.js';

export function TunnelPage() {
  const status = useApi(() => api.tunnelStatus(), []);
  const registry = useApi(() => api.registryUrl(), [], 10_000);
  const topology = useApi(() => api.topology(), [], 0);
  const subdomains = useApi(() => api.subdomains(), [], 10_000);
  const action = useAction();
  const s = status.data;
  const running = s ? s.state !== 'stopped' && s.state !== 'error' : false;

  return (
    <>
      <h1>Tunnel</h1>
      <Section
        title="Status"
        actions={
          <>
            <button
              type="button"
              class="primary"
              disabled={action.busy || running}
              onClick={() => void action.run(() => api.tunnelStart()).then(status.reload)}
            >
              Start tunnel
            </button>
            <button
              type="button"
              disabled={action.busy || !running}
              onClick={() => void action.run(() => api.tunnelStop()).then(status.reload)}
            >
              Stop tunnel
            </button>
          </>
        }
      >
        <ProblemView error={action.error} />
        <ProblemView error={status.error} />
        {s && (
          <dl class="kv">
            <div>
              <dt>State</dt>
              <dd>
                <Badge value={s.state} />
              </dd>
            </div>
            <div>
              <dt>Provider</dt>
              <dd>{s.provider}</dd>
            </div>
            <div>
              <dt>Public URL</dt>
              <dd>{s.public_url ? <code>{s.public_url}</code> : '—'}</dd>
            </div>
            <div>
              <dt>Agent endpoint</dt>
              <dd>{s.agent_endpoint ? <code>{s.agent_endpoint}</code> : '—'}</dd>
            </div>
            <div>
              <dt>Since</dt>
              <dd>{time(s.started_at)}</dd>
            </div>
            {s.last_error && (
              <div>
                <dt>Last error</dt>
                <dd class="error-text">{s.last_error}</dd>
              </div>
            )}
          </dl>
        )}
        {registry.data && (
          <p class="small">
            Agents register at <code>{registry.data.url}</code> ({registry.data.source})
          </p>
        )}
      </Section>
      <Install />
      <Section title="Subdomains">
        <ProblemView error={subdomains.error} />
        {subdomains.data && subdomains.data.subdomains.length === 0 && (
          <Empty>No subdomains: stacks published through the tunnel get one.</Empty>
        )}
        <ul class="plain">
          {subdomains.data?.subdomains.map((d) => (
            <Subdomain key={d.base_id} baseId={d.base_id} url={d.url} subdomain={d.subdomain} />
          ))}
        </ul>
      </Section>
      <Section title="Network topology">
        <ProblemView error={topology.error} />
        {topology.data && (
          <>
            <p>
              Recommended: <Badge value={topology.data.recommended_mode} /> {topology.data.reason}
            </p>
            <dl class="kv">
              <div>
                <dt>Environment</dt>
                <dd>
                  {topology.data.environment.kind}{' '}
                  <span class="muted small">{topology.data.environment.evidence.join('; ')}</span>
                </dd>
              </div>
              <div>
                <dt>Behind NAT</dt>
                <dd>{topology.data.has_nat ? 'yes' : 'no'}</dd>
              </div>
              <div>
                <dt>Local addresses</dt>
                <dd>{topology.data.local_ips.join(', ') || '—'}</dd>
              </div>
              <div>
                <dt>Public address</dt>
                <dd>{topology.data.public_ip ?? 'unknown'}</dd>
              </div>
              <div>
                <dt>Gateway</dt>
                <dd>{topology.data.default_gateway ?? '—'}</dd>
              </div>
              <div>
                <dt>Private subnet</dt>
                <dd>{topology.data.private_subnet ?? '—'}</dd>
              </div>
            </dl>
          </>
        )}
      </Section>
    </>
  );
}

function Subdomain({ baseId, url, subdomain }: { baseId: string; url: string; subdomain: string }) {
  const [services, setServices] = useState<TunnelSubdomainServices | undefined>(undefined);
  const action = useAction();
  return (
    <li>
      <code>{subdomain}</code> → <code>{url}</code>{' '}
      <button
        type="button"
        class="link"
        aria-expanded={services !== undefined}
        onClick={() =>
          services
            ? setServices(undefined)
            : void action.run(() => api.subdomainServices(baseId)).then(setServices)
        }
      >
        {services ? 'hide services' : 'services'}
      </button>
      <ProblemView error={action.error} />
      {services && (
        <ul>
          {services.services.map((svc) => (
            <li key={svc.name}>
              {svc.name}: <code>{svc.url}</code> → <code>{svc.target}</code>
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}

/** A new join token and the one-line commands that install an agent with it. */
function Install() {
  const action = useAction();
  const [command, setCommand] = useState<InstallCommand | undefined>(undefined);
  return (
    <Section
      title="Add a node"
      actions={
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            void action
              .run(async () => api.installCommand((await api.createJoinToken()).token))
              .then((c) => c && setCommand(c))
          }
        >
          New install command
        </button>
      }
    >
      <ProblemView error={action.error} />
      {!command && (
        <p class="muted small">Makes a join token and the command that installs an agent with it.</p>
      )}
      {command && (
        <>
          <p class="small">
            Valid until {time(command.expires_at)}; CA fingerprint <code>{command.ca_fingerprint}</code>
          </p>
          <h3>Linux</h3>
          <div class="copy">
            <pre>{command.linux}</pre>
            <CopyButton text={command.linux} label="Copy Linux command" />
          </div>
          <h3>Windows</h3>
          <div class="copy">
            <pre>{command.windows}</pre>
            <CopyButton text={command.windows} label="Copy Windows command" />
          </div>
        </>
      )}
    </Section>
  );
}

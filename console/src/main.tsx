import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { session } from './api.js';
import { Link, ProblemView, Field } from './components.js';
import { useAction } from './hooks.js';
import { match, navigate, useLocation } from './router.js';
import { AuditPage } from './pages/audit.js';
import { DriftPage } from './pages/drift.js';
import { JobPage, JobsPage } from './pages/jobs.js';
import { MetricsPage } from './pages/metrics.js';
import { OverviewPage } from './pages/overview.js';
import { SettingsPage } from './pages/settings.js';
import { NewStackPage, StackPage, StacksPage } from './pages/stacks.js';
import { TunnelPage } from './pages/tunnel.js';
import { WorkersPage } from './pages/workers.js';
import './styles.css';

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/workers', 'Workers'],
  ['/stacks', 'Stacks'],
  ['/jobs', 'Jobs'],
  ['/drift', 'Drift'],
  ['/metrics', 'Metrics'],
  ['/tunnel', 'Tunnel'],
  ['/settings', 'Settings'],
  ['/audit', 'Audit'],
];

type Theme = 'system' | 'light' | 'dark';
const THEME_KEY = 'console-theme';

function applyTheme(theme: Theme): void {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

const initialTheme = (localStorage.getItem(THEME_KEY) as Theme | null) ?? 'system';
applyTheme(initialTheme);

/** The theme applies as it is chosen (not after the next paint) and is remembered for the next visit. */
function useTheme(): [Theme, (t: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const choose = (next: Theme) => {
    applyTheme(next);
    localStorage.setItem(THEME_KEY, next);
    setTheme(next);
  };
  return [theme, choose];
}

function ThemeToggle() {
  const [theme, setTheme] = useTheme();
  const next: Record<Theme, Theme> = { system: 'dark', dark: 'light', light: 'system' };
  return (
    <button
      type="button"
      class="theme"
      onClick={() => setTheme(next[theme])}
      title={`Switch to ${next[theme] === 'system' ? 'the system setting' : next[theme]}`}
    >
      Theme: {theme === 'system' ? 'auto' : theme}
    </button>
  );
}

function SignIn() {
  const [clientId, setClientId] = useState('');
  const [secret, setSecret] = useState('');
  const action = useAction();
  return (
    <main id="main" class="signin">
      <h1>Stack orchestrator</h1>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(() => session.signIn(clientId.trim(), secret));
        }}
      >
        <h2>Sign in</h2>
        {session.endedBecause && !action.error && (
          <p class="problem" role="status">
            Signed out: {session.endedBecause}
          </p>
        )}
        <Field id="main-client-id" label="Client id">
          <input
            id="main-client-id"
            name="client_id"
            autocomplete="username"
            required
            value={clientId}
            onInput={(e) => setClientId(e.currentTarget.value)}
          />
        </Field>
        <Field id="main-client-secret" label="Client secret">
          <input
            id="main-client-secret"
            name="client_secret"
            type="password"
            autocomplete="current-password"
            required
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
          />
        </Field>
        <ProblemView error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">
          The token stays in this tab's memory only: reloading the page signs you out.
        </p>
      </form>
      <ThemeToggle />
    </main>
  );
}

function Page({ path }: { path: string }) {
  let params: Record<string, string> | null;
  if (path === '/') return <OverviewPage />;
  if (path === '/workers') return <WorkersPage />;
  if (path === '/stacks') return <StacksPage />;
  if (path === '/stacks/new') return <NewStackPage />;
  if ((params = match('/stacks/:id', path))) return <StackPage id={params.id} />;
  if (path === '/jobs') return <JobsPage />;
  if ((params = match('/jobs/:id', path))) return <JobPage id={params.id} />;
  if (path === '/drift') return <DriftPage />;
  if (path === '/metrics') return <MetricsPage />;
  if (path === '/tunnel') return <TunnelPage />;
  if (path === '/settings') return <SettingsPage />;
  if (path === '/audit') return <AuditPage />;
  return (
    <section class="card">
      <h1>Not found</h1>
      <p>
        No page at <code>{path}</code>. <Link to="/">Back to the overview</Link>
      </p>
    </section>
  );
}

function App() {
  const [, setTick] = useState(0);
  useEffect(() => session.subscribe(() => setTick((n) => n + 1)), []);
  const { path } = useLocation();
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [path]);
  if (!session.signedIn) return <SignIn />;
  const section = '/' + (path.split('/')[1] ?? '');
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Stack orchestrator</span>
        <button
          type="button"
          class="menu"
          aria-expanded={menu}
          aria-controls="nav"
          onClick={() => setMenu(!menu)}
        >
          Menu
        </button>
        <nav id="nav" class={menu ? 'open' : undefined} aria-label="Pages">
          {NAV.map(([to, label]) => (
            <a
              key={to}
              href={`/console${to}`}
              aria-current={section === to ? 'page' : undefined}
              onClick={(e) => {
                if (e.ctrlKey || e.metaKey || e.shiftKey) return;
                e.preventDefault();
                navigate(to);
              }}
            >
              {label}
            </a>
          ))}
        </nav>
        <div class="who">
          <span class="muted" title={`owner ${session.identity?.owner ?? ''}`}>
            {session.identity?.clientId}
          </span>
          <ThemeToggle />
          <button type="button" onClick={() => void session.signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page path={path} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { launchChromium, screenshot, seriousAccessibilityViolations } from '../support/browser.js';
import { FAST_AGENT_ENV, freePort, orchestrator, servicePid, webStackYaml } from '../support/stacks.js';

/** How long the page may take to show what a real agent does (enroll, deploy, drift checks). */
const WAIT = 45_000;
const STEP = 120_000;

/**
 * The operator web console in a real browser (Debian's chromium through playwright-core) against
 * the whole service and a real process-driver agent: an operator's morning, page by page, with a
 * screenshot and an axe-core check (light and dark) of each page.
 */
describe('the web console in a browser', () => {
  let t: TestApp;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let agent: AgentProcess | undefined;
  let stackId = '';
  let port = 0;
  const STACK = 'console-web';
  const NODE = 'console-node';

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_AGENT_ENV });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    port = await freePort();
  });

  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
    await t?.close();
  });

  const shown = (selector: string, timeout = WAIT) => page.locator(selector).first().waitFor({ timeout });
  /** A chart's line: a flat one has no height, which Playwright calls hidden, so only its presence counts. */
  const drawn = (chart: string) =>
    page.locator(`${chart} svg polyline`).first().waitFor({ state: 'attached', timeout: WAIT });
  const heading = (name: string | RegExp) =>
    page.getByRole('heading', { level: 1, name }).waitFor({ timeout: WAIT });
  const go = async (label: string) => {
    await page
      .getByRole('navigation', { name: 'Pages' })
      .getByRole('link', { name: label, exact: true })
      .click();
  };

  /** A screenshot, then axe in both colour schemes: no serious or critical violation. */
  async function check(name: string): Promise<void> {
    await screenshot(page, name);
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await seriousAccessibilityViolations(page), `${name} (${colorScheme})`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }

  it('signs in with a client id and secret', async () => {
    await page.goto(`${t.url}/console/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await check('01-sign-in');
    await page.getByLabel('Client id').fill(ADMIN.clientId);
    await page.getByLabel('Client secret').fill('wrong-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // The token endpoint's refusal, shown as a problem.
    await page.getByRole('alert').filter({ hasText: 'Client authentication failed.' }).waitFor();
    await page.getByLabel('Client secret').fill(ADMIN.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await heading('Overview');
    await shown('.badge-healthy, .badge-degraded');
    await page.getByText('No workers yet.').waitFor();
    await check('02-overview');
  });

  it('approves a real pending agent with one click', { timeout: STEP }, async () => {
    const token = await orchestrator(t).post('/join-tokens', {});
    expect(token.status).toBe(201);
    agent = AgentProcess.start({ server: t.url, token: token.body.token as string, name: NODE });
    await go('Workers');
    await heading('Workers');
    const row = page.locator(`article[data-worker="${NODE}"]`);
    await row.locator('.badge-pending').waitFor({ timeout: WAIT });
    await screenshot(page, '03-workers-pending');
    await row.getByRole('button', { name: `Approve ${NODE}` }).click();
    await row.locator('.badge-healthy, .badge-degraded').first().waitFor({ timeout: WAIT });
    await row.locator('meter').first().waitFor({ timeout: WAIT });
    await check('04-workers');
  });

  it('shows a typo at its line as you type, then creates the fixed stack', { timeout: STEP }, async () => {
    const good = webStackYaml(STACK, port).trimStart();
    const typo = good.replace('    command:', '    comand:');
    const typoLine = typo.split('\n').findIndex((l) => l.includes('comand:')) + 1;
    await go('Stacks');
    await heading('Stacks');
    await page.getByText('No stacks yet').waitFor();
    await page.getByRole('link', { name: 'New stack' }).click();
    await heading('New stack');
    const editor = page.getByLabel('Stack definition (YAML)');
    await editor.fill(typo);
    const errors = page.getByTestId('validation').getByRole('alert');
    await errors.getByRole('button', { name: `line ${typoLine}, column 5` }).waitFor({ timeout: WAIT });
    await shown(`.gl.error[data-line="${typoLine}"]`);
    await check('05-stack-editor-error');
    // Clicking the position puts the caret there.
    await errors.getByRole('button', { name: `line ${typoLine}, column 5` }).click();
    const caret = await editor.evaluate((el: unknown) => (el as { selectionStart: number }).selectionStart);
    expect(typo.slice(caret, caret + 'comand'.length)).toBe('comand');

    await editor.fill(good);
    await page.getByTestId('validation').getByText('Valid: basement-kit/').waitFor({ timeout: WAIT });
    await page.getByRole('button', { name: 'Create stack' }).click();
    await heading(`Stack ${STACK}`);
    stackId = /\/console\/stacks\/([^/?#]+)/.exec(page.url())![1];
    expect((await orchestrator(t).get(`/stacks/${stackId}`)).body.status).toBe('draft');
  });

  it(
    "deploys it and follows the job's output to the end, then shows the service healthy",
    { timeout: STEP },
    async () => {
      await page.getByRole('button', { name: 'Deploy revision 1' }).click();
      await heading(/^Job /);
      await shown('pre.log[data-complete="true"]', WAIT);
      const output = await page.getByLabel('Job output').innerText();
      expect(output).toContain('web: starting');
      expect(output).toContain('web: healthy (HTTP 200');
      await page.getByText(/End of output \(\d+ lines\)\./).waitFor();
      await shown('.card .badge-succeeded');
      await check('06-job');

      await page.getByRole('link', { name: STACK }).first().click();
      await heading(`Stack ${STACK}`);
      await shown('tr[data-service="web"] .badge-healthy');
      await shown('.card .badge-deployed');
      await check('07-stack');
    },
  );

  it('shows the drift of a service stopped by hand and resolves it', { timeout: STEP }, async () => {
    const pid = servicePid(agent!.dataDir, stackId, 'web');
    // 0 would signal this whole process group.
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, 'SIGKILL');
    await page.getByRole('link', { name: 'Drift', exact: true }).first().click();
    await heading('Drift');
    await shown('.badge-missing');
    await shown('.badge-drifted');
    const row = page.locator('tr', { has: page.locator('.badge-missing') });
    expect(await row.innerText()).toContain('web');
    await check('08-drift');
    await page.getByRole('button', { name: `Resolve ${STACK}` }).click();
    await heading(/^Job /);
    await shown('pre.log[data-complete="true"]', WAIT);
    await shown('.card .badge-succeeded');
    await go('Drift');
    await heading('Drift');
    await page.getByText('In sync: nothing differs.').waitFor({ timeout: WAIT });
  });

  it('runs a PromQL query and draws the chart', { timeout: STEP }, async () => {
    await go('Metrics');
    await heading('Metrics');
    await page.getByLabel('PromQL expression').fill('stack_node_cpu_percent');
    await page.getByRole('button', { name: 'Run query' }).click();
    const chart = page.locator('.chart-box[data-query="stack_node_cpu_percent"]');
    await drawn('.chart-box[data-query="stack_node_cpu_percent"]');
    expect(await chart.locator('.legend').innerText()).toContain(`worker="${NODE}"`);
    // The ready-made charts for the worker and the stack.
    await drawn('.chart-box[data-query^="stack_node_memory_percent"]');
    await drawn(`.chart-box[data-query="stack_service_up{stack_id=\\"${stackId}\\"}"]`);
    await check('09-metrics');
  });

  it(
    'edits the stack into a new revision and shows the diff between revisions',
    { timeout: STEP },
    async () => {
      await go('Stacks');
      await page.getByRole('link', { name: STACK, exact: true }).click();
      await heading(`Stack ${STACK}`);
      await page.getByRole('button', { name: 'Edit' }).click();
      const editor = page.getByLabel('Stack definition (YAML)');
      await editor.waitFor();
      const source = await editor.inputValue();
      expect(source).toContain('VERSION: "1"');
      await editor.fill(source.replace('VERSION: "1"', 'VERSION: "2"'));
      await page.getByTestId('validation').getByText('Valid: basement-kit/').waitFor({ timeout: WAIT });
      await page.getByRole('button', { name: 'Save revision' }).click();
      await page.getByRole('button', { name: 'Deploy revision 2' }).waitFor({ timeout: WAIT });
      const diff = page.getByLabel('Changes from r1 to r2');
      await diff.waitFor({ timeout: WAIT });
      // The diff's lines come with the revisions' answers, after its frame: wait for them.
      await expect
        .poll(() => diff.locator('.d-removed').allInnerTexts(), { timeout: WAIT })
        .toEqual(['-       VERSION: "1"']);
      expect(await diff.locator('.d-added').allInnerTexts()).toEqual(['+       VERSION: "2"']);
      await check('10-stack-revisions');
    },
  );

  it(
    'lists jobs with filters, and shows the tunnel, settings and audit pages',
    { timeout: STEP },
    async () => {
      await go('Jobs');
      await heading('Jobs');
      await page.getByLabel('Type', { exact: true }).selectOption('provision');
      await page.waitForURL(/type=provision/);
      await shown('table .badge-succeeded');
      // The unfiltered list may still be shown: wait for the filtered answer.
      await expect.poll(() => page.locator('tbody tr').count(), { timeout: 10_000 }).toBe(2);
      await check('11-jobs');

      await go('Tunnel');
      await heading('Tunnel');
      await shown('.badge-stopped');
      await page.getByText('Recommended:').waitFor({ timeout: WAIT });
      await check('12-tunnel');

      await go('Settings');
      await heading('Settings');
      await page.getByLabel('Level', { exact: true }).selectOption('debug');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      expect((await orchestrator(t).get('/settings')).body.log_level).toBe('debug');
      await check('13-settings');

      await go('Audit');
      await heading('Audit trail');
      await page.getByLabel('Action', { exact: true }).fill('worker.approved');
      await page.getByRole('button', { name: 'Filter' }).click();
      // The unfiltered page holds that row too: wait for the filtered answer, one row.
      await expect.poll(() => page.locator('tbody tr').count(), { timeout: 10_000 }).toBe(1);
      expect(await page.locator('tbody tr').first().textContent()).toContain('worker.approved');
      await check('14-audit');
    },
  );

  it(
    'reads on a phone, switches to dark, and signs out by revoking its own refresh token',
    { timeout: STEP },
    async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('button', { name: 'Menu' }).click();
      await go('Overview');
      await heading('Overview');
      // The page is as wide as the screen: nothing scrolls sideways (wide tables scroll in their own box).
      const overflow = await page.evaluate(() => {
        const g = globalThis as unknown as {
          innerWidth: number;
          document: { documentElement: { scrollWidth: number } };
        };
        return g.document.documentElement.scrollWidth - g.innerWidth;
      });
      expect(overflow).toBeLessThanOrEqual(0);
      await screenshot(page, '15-overview-phone');
      await page.setViewportSize({ width: 1280, height: 900 });

      await page.getByRole('button', { name: 'Theme: auto' }).click();
      await page.getByRole('button', { name: 'Theme: dark' }).waitFor();
      expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
      await screenshot(page, '16-overview-dark');
      expect(await seriousAccessibilityViolations(page)).toEqual([]);

      // Another sign-in of the same client, which the console's sign-out must leave alone.
      const other = await t.token();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      const revoked = await orchestrator(t).get('/audit?action=refresh.revoked');
      expect(revoked.body.events).toHaveLength(1);
      const refresh = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'refresh_token', refresh_token: other.refresh_token });
      expect(refresh.status).toBe(200);
    },
  );
});

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentBundle, AgentBundleUnavailableError, defaultAgentBundlePath } from './agent-bundle.js';

describe('AgentBundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-bundle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('looks for the build output under dist/downloads of the package', () => {
    expect(defaultAgentBundlePath()).toBe(join(process.cwd(), 'dist/downloads/stack-agent.mjs'));
  });

  it('reads the file once and gives its SHA-256, even when the file changes afterwards', async () => {
    const file = join(dir, 'stack-agent.mjs');
    writeFileSync(file, 'first');
    const bundle = new AgentBundle(file);
    const first = await bundle.load();
    expect(first.bytes.toString()).toBe('first');
    expect(first.sha256).toBe(createHash('sha256').update('first').digest('hex'));
    writeFileSync(file, 'second');
    expect(await bundle.load()).toBe(first);
  });

  it('is a 503 problem while the file is missing, and found once it is built', async () => {
    const file = join(dir, 'later.mjs');
    const bundle = new AgentBundle(file);
    const missing = await bundle.load().catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(AgentBundleUnavailableError);
    expect(missing).toMatchObject({ status: 503, code: 'agent_bundle_unavailable' });
    expect((missing as Error).message).toContain('npm run build');
    writeFileSync(file, 'built');
    expect((await bundle.load()).bytes.toString()).toBe('built');
  });

  it('is the same 503 for a path that cannot be read as a file', async () => {
    await expect(new AgentBundle(dir).load()).rejects.toBeInstanceOf(AgentBundleUnavailableError);
  });
});

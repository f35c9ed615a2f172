import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleAgent, checkBundleAlone, runBundleAlone } from './build-agent-bundle.js';

describe('the agent bundle', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-bundle-build-'));
  let file: string;

  beforeAll(async () => {
    file = await bundleAgent(join(dir, 'stack-agent.mjs'));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('runs alone: no node_modules, package.json or .proto beside it', () => {
    const help = runBundleAlone(file, ['--help']);
    expect(help.status).toBe(0);
    expect(help.output).toContain('usage: stack-agent --server URL');
    // Gets past loading the protocol and the version, and stops for want of a token, before any request.
    expect(() => checkBundleAlone(file)).not.toThrow();
  });

  it('carries the version of package.json and the text of agent.proto', () => {
    const text = readFileSync(file, 'utf8');
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(text).toContain(`JSON.parse('{"version":"${version}"}')`);
    expect(text).not.toMatch(/new URL\(["'](\.\.\/)+package\.json/);
    expect(text).toContain('service AgentGateway {');
  });

  it('is an ES module that defines require for the CommonJS code inside, after the shebang', () => {
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines[0]).toBe('#!/usr/bin/env node');
    expect(lines[1]).toBe("import { createRequire as __bundleCreateRequire } from 'node:module';");
  });
});

import { describe, expect, it } from 'vitest';
import { cameThroughTunnel } from './tunnel-agent-route.js';

describe('cameThroughTunnel', () => {
  it('matches the public URL host and port, whatever the case and an explicit default port', () => {
    expect(cameThroughTunnel('http://127.0.0.1:8080', '127.0.0.1:8080')).toBe(true);
    expect(cameThroughTunnel('https://Orchestrator.Example.com', 'orchestrator.example.com')).toBe(true);
    expect(cameThroughTunnel('https://orchestrator.example.com', 'orchestrator.example.com:443')).toBe(true);
    expect(cameThroughTunnel('http://relay.example.com', 'relay.example.com:80')).toBe(true);
    expect(cameThroughTunnel('https://[::1]:8443/', '[::1]:8443')).toBe(true);
  });

  it('refuses another host, another port, or a header that is no host', () => {
    expect(cameThroughTunnel('http://127.0.0.1:8080', '127.0.0.1:5260')).toBe(false);
    expect(cameThroughTunnel('http://127.0.0.1:8080', '127.0.0.1')).toBe(false);
    expect(cameThroughTunnel('https://orchestrator.example.com', 'orchestrator.example.com:80')).toBe(false);
    expect(cameThroughTunnel('https://orchestrator.example.com', 'evil.example.com')).toBe(false);
    expect(cameThroughTunnel('https://orchestrator.example.com', 'orchestrator.example.com.evil')).toBe(
      false,
    );
    expect(cameThroughTunnel('https://orchestrator.example.com', 'orchestrator.example.com/path')).toBe(
      false,
    );
    expect(cameThroughTunnel('https://orchestrator.example.com', 'a@orchestrator.example.com')).toBe(false);
    expect(cameThroughTunnel('https://orchestrator.example.com', '')).toBe(false);
    expect(cameThroughTunnel('https://orchestrator.example.com', '[bad')).toBe(false);
    expect(cameThroughTunnel('not a url', 'orchestrator.example.com')).toBe(false);
  });
});

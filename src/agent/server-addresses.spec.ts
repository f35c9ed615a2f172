import { describe, expect, it } from 'vitest';
import {
  Backoff,
  candidateEndpoint,
  candidateTarget,
  parseEndpointList,
  parseServerList,
  resolveCandidates,
  Rotation,
  storedEndpoints,
  systemLookup,
  type Candidate,
} from './server-addresses.js';

describe('parseServerList', () => {
  it('takes repeated and comma-separated URLs, blanks dropped', () => {
    expect(parseServerList(['http://a.example:5260', 'https://b.example/, http://127.0.0.1:1'])).toEqual([
      'http://a.example:5260',
      'https://b.example/',
      'http://127.0.0.1:1',
    ]);
    expect(parseServerList(['http://[::1]:5260,'])).toEqual(['http://[::1]:5260']);
  });

  it.each([
    [[], '--server is required'],
    [[' , '], '--server is required'],
    [['a.example:5260'], '--server wants the service\'s http:// or https:// URL, got "a.example:5260"'],
    [['http://a.example,ftp://b.example'], 'got "ftp://b.example"'],
    [['http://a.example,not a url'], 'got "not a url"'],
    [['http://user:secret@a.example'], '--server URLs must not carry credentials'],
  ])('refuses %j', (values, message) => {
    expect(() => parseServerList(values)).toThrow(message);
  });
});

describe('parseEndpointList', () => {
  it('takes host:port entries, repeated and comma-separated; IPv6 in brackets', () => {
    expect(
      parseEndpointList(['orch-1.example:5263,127.0.0.1:1', '[::1]:65535', 'agents_svc.local:5263']),
    ).toEqual([
      { host: 'orch-1.example', port: 5263 },
      { host: '127.0.0.1', port: 1 },
      { host: '::1', port: 65535 },
      { host: 'agents_svc.local', port: 5263 },
    ]);
  });

  it.each([
    [''],
    ['orch.example'],
    ['orch.example:0'],
    ['orch.example:65536'],
    ['::1:5263'],
    ['[not-v6]:5263'],
    ['https://orch.example:5263'],
    ['orch.example:5263,orch.example'],
  ])('refuses %j, naming the entry', (value) => {
    expect(() => parseEndpointList([value])).toThrow(/--agent-endpoint wants host:port entries/);
  });
});

describe('storedEndpoints', () => {
  it('reads what the service advertised or an earlier --agent-endpoint list', () => {
    expect(storedEndpoints('127.0.0.1:5263')).toEqual([{ host: '127.0.0.1', port: 5263 }]);
    expect(storedEndpoints('[::1]:5263,orch.example:7')).toEqual([
      { host: '::1', port: 5263 },
      { host: 'orch.example', port: 7 },
    ]);
    expect(storedEndpoints('nothing')).toEqual([]);
  });
});

describe('resolveCandidates', () => {
  it('dials every address of a name, checked against the name; IPs as they are; no duplicates', async () => {
    const lookup = (host: string) =>
      Promise.resolve(host === 'orch.example' ? ['192.0.2.1', '2001:db8::1', '192.0.2.1'] : ['192.0.2.2']);
    const { candidates, unresolved } = await resolveCandidates(
      [
        { host: 'orch.example', port: 5263 },
        { host: '192.0.2.1', port: 5263 },
        { host: '192.0.2.1', port: 5264 },
        { host: 'other.example', port: 5263 },
      ],
      lookup,
    );
    expect(unresolved).toEqual([]);
    expect(candidates.map((c) => [candidateTarget(c), candidateEndpoint(c)])).toEqual([
      ['192.0.2.1:5263', 'orch.example:5263'],
      ['[2001:db8::1]:5263', 'orch.example:5263'],
      ['192.0.2.1:5264', '192.0.2.1:5264'],
      ['192.0.2.2:5263', 'other.example:5263'],
    ]);
  });

  it('keeps a name that does not resolve as a candidate of its own, and says so', async () => {
    const lookup = (host: string) =>
      host === 'gone.example'
        ? Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }))
        : Promise.resolve([]);
    const { candidates, unresolved } = await resolveCandidates(
      [
        { host: 'gone.example', port: 1 },
        { host: 'empty.example', port: 2 },
      ],
      lookup,
    );
    expect(candidates).toEqual([
      { address: 'gone.example', port: 1, name: 'gone.example' },
      { address: 'empty.example', port: 2, name: 'empty.example' },
    ]);
    expect(unresolved).toEqual([
      { endpoint: 'gone.example:1', error: 'ENOTFOUND' },
      { endpoint: 'empty.example:2', error: 'no addresses' },
    ]);
  });

  it('resolves localhost with the system resolver to loopback addresses, each checked as localhost', async () => {
    const { candidates, unresolved } = await resolveCandidates(
      [{ host: 'localhost', port: 5263 }],
      systemLookup,
    );
    expect(unresolved).toEqual([]);
    expect(candidates.length).toBeGreaterThan(0);
    for (const c of candidates) {
      expect(['127.0.0.1', '::1']).toContain(c.address);
      expect(c.name).toBe('localhost');
    }
    expect(candidates.map((c) => c.address)).toContain('127.0.0.1');
  });
});

describe('Rotation', () => {
  const c = (address: string): Candidate => ({ address, port: 5263, name: 'orch.example' });
  const list = [c('192.0.2.3'), c('192.0.2.1'), c('192.0.2.2')];

  it('starts at a random one, then moves to one not tried yet, never straight back', () => {
    const ring = new Rotation<Candidate>(candidateTarget, () => 0.5);
    const picks: string[] = [];
    for (let i = 0; i < 6; i++) {
      picks.push(ring.pick(list).address);
      ring.advance();
    }
    // Every server once before any twice; then any but the one just left.
    expect(new Set(picks.slice(0, 3)).size).toBe(3);
    for (let i = 1; i < picks.length; i++) expect(picks[i]).not.toBe(picks[i - 1]);
    expect(picks[0]).toBe('192.0.2.2');
  });

  it('spreads first picks, and the moves away from a failed server, over every other server', () => {
    const firsts = [0, 0.34, 0.67, 0.999999].map((r) =>
      new Rotation<Candidate>(candidateTarget, () => r).pick(list),
    );
    expect(new Set(firsts.map((x) => x.address))).toEqual(new Set(['192.0.2.1', '192.0.2.2', '192.0.2.3']));
    // Agents that all held 192.0.2.1 (its replica died) do not all go to the same survivor.
    const next = [0, 0.2, 0.7, 0.99].map((r) => {
      let first = true;
      const ring = new Rotation<Candidate>(candidateTarget, () => (first ? ((first = false), 0) : r));
      ring.pick(list);
      ring.settled();
      ring.advance();
      return ring.pick(list).address;
    });
    expect(new Set(next)).toEqual(new Set(['192.0.2.2', '192.0.2.3']));
  });

  it('stays with the one in use until told to move on, whatever order the resolver answers in', () => {
    const ring = new Rotation<Candidate>(candidateTarget, () => 0);
    expect(ring.pick(list).address).toBe('192.0.2.1');
    expect(ring.pick([...list].reverse()).address).toBe('192.0.2.1');
    ring.advance();
    expect(ring.pick([...list].reverse()).address).toBe('192.0.2.2');
    ring.advance();
    // Shuffled again: one not tried yet, never back to the one that just failed.
    expect(ring.pick([list[1], list[2], list[0]]).address).toBe('192.0.2.3');
  });

  it('replaces a server that left the list, and keeps one that is alone', () => {
    const ring = new Rotation<Candidate>(candidateTarget, () => 0.5);
    expect(ring.pick(list).address).toBe('192.0.2.2');
    expect(ring.pick([c('192.0.2.1'), c('192.0.2.3')]).address).not.toBe('192.0.2.2');
    ring.advance();
    expect(ring.pick([c('192.0.2.1')]).address).toBe('192.0.2.1');
    ring.advance();
    expect(ring.pick([c('192.0.2.1')]).address).toBe('192.0.2.1');
    expect(() => ring.pick([])).toThrow();
  });
});

describe('Backoff', () => {
  it('waits up to the ceiling (full jitter) and doubles it once every server has failed, up to the maximum', () => {
    const top = new Backoff(500, 30_000, () => 1);
    // Three servers: three failures at 500 ms, then three at 1 s, ...
    expect(Array.from({ length: 7 }, () => top.failed(3))).toEqual([500, 500, 500, 1000, 1000, 1000, 2000]);
    const one = new Backoff(500, 3000, () => 1);
    expect(Array.from({ length: 5 }, () => one.failed(1))).toEqual([500, 1000, 2000, 3000, 3000]);
    expect(new Backoff(500, 30_000, () => 0.5).failed(1)).toBe(250);
    expect(new Backoff(500, 30_000, () => 0).failed(0)).toBe(0);
  });

  it('starts again from the minimum after a success', () => {
    const b = new Backoff(500, 30_000, () => 1);
    b.failed(1);
    b.failed(1);
    b.reset();
    expect(b.failed(2)).toBe(500);
    expect(b.failed(2)).toBe(500);
    expect(b.failed(2)).toBe(1000);
  });
});

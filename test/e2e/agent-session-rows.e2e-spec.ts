import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idBits } from '../../src/server/agent-gateway/agent-sessions.js';
import { SessionDirectory } from '../../src/server/agent-gateway/session-directory.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import {
  agentEndpoint,
  connectAgent,
  enrollAgent,
  preApprovedToken,
  type AgentIdentity,
} from '../support/grpc-agent.js';

// A replica's `agent_sessions` rows are live while it renews its `agent_replicas` row (every
// second). A row of its own whose stream is gone (the release at the stream's end
// failed: the database out of reach, or too busy when a whole fleet left at once) must not be
// renewed for ever, which would show the worker connected through every replica for as long as
// this one runs: the renewal removes it.

describe("a replica's session row without a stream", () => {
  let t: TestApp;
  let agent: AgentIdentity;

  beforeAll(async () => {
    t = await startTestApp();
    agent = await enrollAgent(t.url, await preApprovedToken(t), 'row-without-stream');
  });
  afterAll(() => t?.close());

  const connected = async () =>
    (
      await t.http
        .get(`/api/v1/orchestrator/workers/${agent.id}`)
        .set('Authorization', await t.adminAuth())
        .expect(200)
    ).body.connected as boolean;

  it('is removed by the renewal once older than the session TTL, and the worker shows as not connected', async () => {
    const db = t.app.get(DataSource);
    const replica = t.app.get(SessionDirectory).replica;
    const rows = async () =>
      Number(
        (
          await db.query<{ n: string }[]>('SELECT count(*) AS n FROM agent_sessions WHERE worker_id = $1', [
            agent.id,
          ])
        )[0].n,
      );
    // What a release that failed leaves behind: this replica's row, claimed a minute ago.
    await db.query(
      `INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key, connected_at)
       SELECT id, $2, owner, '127.0.0.1', '', '', now() - interval '1 minute' FROM workers WHERE id = $1`,
      [agent.id, replica],
    );
    expect(await rows()).toBe(1);
    await eventually(async () => (await rows()) === 0, 15_000);
    await eventually(async () => !(await connected()), 15_000);
  });

  it('a row claimed within the session TTL stays; the renewal writes the replica’s row, not the session’s', async () => {
    const db = t.app.get(DataSource);
    const replica = t.app.get(SessionDirectory).replica;
    await db.query(
      `INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key)
       SELECT id, $2, owner, '127.0.0.1', '', '' FROM workers WHERE id = $1`,
      [agent.id, replica],
    );
    const seenAt = async () =>
      (
        await db.query<{ seen_at: Date }[]>(`SELECT seen_at FROM agent_sessions WHERE worker_id = $1`, [
          agent.id,
        ])
      )[0];
    const replicaAge = async () =>
      Number(
        (
          await db.query<{ age_ms: number }[]>(
            `SELECT extract(epoch FROM clock_timestamp() - seen_at) * 1000 AS age_ms
               FROM agent_replicas WHERE replica = $1`,
            [replica],
          )
        )[0].age_ms,
      );
    const claimed = await seenAt();
    // Several renewals later the row is still there, unwritten (before session 19 each session
    // row was renewed itself), and the worker shows as connected: its replica's row is fresh.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(await seenAt()).toEqual(claimed);
    expect(await replicaAge()).toBeLessThan(3000);
    expect(await connected()).toBe(true);
    await db.query('DELETE FROM agent_sessions WHERE worker_id = $1', [agent.id]);
  });

  it('a session whose replica stopped renewing its row is gone for every replica, and another may take it', async () => {
    const db = t.app.get(DataSource);
    // A replica that held the agent's stream and died: its liveness row last renewed just now, then
    // a minute ago.
    const ghost = 'ghost-host/1/deadbeef';
    await db.query(`INSERT INTO agent_replicas (replica, seen_at) VALUES ($1, clock_timestamp())`, [ghost]);
    await db.query(
      `INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key)
       SELECT id, $2, owner, '127.0.0.1', '', '' FROM workers WHERE id = $1`,
      [agent.id, ghost],
    );
    const directory = t.app.get(SessionDirectory);
    try {
      await eventually(() => Promise.resolve(directory.get(agent.id)?.replica === ghost), 10_000);
      expect(await connected()).toBe(true);
      expect(await directory.heldElsewhere(agent.id)).toBe(true);
      await db.query(
        `UPDATE agent_replicas SET seen_at = clock_timestamp() - interval '1 minute' WHERE replica = $1`,
        [ghost],
      );
      await eventually(() => Promise.resolve(directory.get(agent.id) === undefined), 10_000);
      expect(await connected()).toBe(false);
      expect(await directory.heldElsewhere(agent.id)).toBe(false);
      // The agent connects here: its claim takes the dead replica's row.
      const session = await connectAgent(await agentEndpoint(t), agent, 1000);
      try {
        await eventually(async () => {
          const rows = await db.query<{ replica: string }[]>(
            'SELECT replica FROM agent_sessions WHERE worker_id = $1',
            [agent.id],
          );
          return rows[0]?.replica === directory.replica;
        });
        expect(await connected()).toBe(true);
      } finally {
        session.close();
      }
    } finally {
      await db.query(`DELETE FROM agent_sessions WHERE worker_id = $1 AND replica = $2`, [agent.id, ghost]);
      await db.query(`DELETE FROM agent_replicas WHERE replica = $1`, [ghost]);
    }
  });

  it('a release of an older stream leaves the row of the stream held now; a row lost all the same is restored', async () => {
    const db = t.app.get(DataSource);
    const replica = t.app.get(SessionDirectory).replica;
    const endpoint = await agentEndpoint(t);
    const session = await connectAgent(endpoint, agent, 1000);
    try {
      const row = async () =>
        (
          await db.query<{ replica: string; probe_address: string }[]>(
            'SELECT replica, probe_address FROM agent_sessions WHERE worker_id = $1',
            [agent.id],
          )
        )[0];
      await eventually(async () => (await row())?.replica === replica);
      const claimed = await row();
      // The release of this worker's previous stream, run after the new stream took over here,
      // leaves the new stream's row alone.
      await t.app.get(SessionDirectory).release(agent.id);
      expect(await row()).toEqual(claimed);
      // What such a release did when it ran while the new stream's hello was between its claim and
      // taking the stream: this replica's row gone, while the new stream stays open.
      await db.query('DELETE FROM agent_sessions WHERE worker_id = $1 AND replica = $2', [agent.id, replica]);
      await eventually(async () => (await row())?.replica === replica, 10_000);
      expect(await row()).toEqual(claimed);
      await eventually(async () => connected(), 10_000);
    } finally {
      session.close();
    }
  });

  it('reads none of its own rows while they are its streams, and notices a swap that keeps their count', async () => {
    const db = t.app.get(DataSource);
    const directory = t.app.get(SessionDirectory);
    const replica = directory.replica;
    const endpoint = await agentEndpoint(t);
    const session = await connectAgent(endpoint, agent, 1000);
    const other = await enrollAgent(t.url, await preApprovedToken(t), 'row-swapped-in');
    try {
      const holder = async (id: string) =>
        (
          await db.query<{ replica: string }[]>('SELECT replica FROM agent_sessions WHERE worker_id = $1', [
            id,
          ])
        )[0]?.replica;
      await eventually(async () => (await holder(agent.id)) === replica);
      // Steady (a look after the claim and before the stream is taken may read them, once): each
      // look sums its rows up, and reads none of them.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const query = db.query.bind(db);
      const seen: string[] = [];
      // Every argument passed on: a query inside a transaction names its query runner, and without
      // it would wait for a second connection (the embedded database's pool has one).
      db.query = ((...args: Parameters<typeof query>) => {
        if (args[0].includes('FROM agent_sessions')) seen.push(args[0]);
        return query(...args);
      }) as typeof db.query;
      try {
        // Three looks, about a second apart.
        await eventually(() => seen.filter((sql) => sql.includes('count(*)')).length >= 3, 15_000);
      } finally {
        db.query = query;
      }
      // Every look read the other replicas' rows with the sums; none read this replica's rows.
      expect(
        seen.filter((sql) => sql.includes('probe_key FROM agent_sessions') && !sql.includes('count(*)')),
      ).toEqual([]);
      // One row for one stream still, but another worker's: the sums differ, the rows are read, the
      // stream's row is restored and the other (claimed a minute ago, no stream here) removed.
      await db.query(
        `WITH gone AS (DELETE FROM agent_sessions WHERE worker_id = $1)
         INSERT INTO agent_sessions (worker_id, replica, owner, remote_host, probe_address, probe_key, connected_at)
         SELECT id, $3, owner, '127.0.0.1', '', '', now() - interval '1 minute' FROM workers WHERE id = $2`,
        [agent.id, other.id, replica],
      );
      await eventually(async () => (await holder(agent.id)) === replica, 10_000);
      await eventually(async () => (await holder(other.id)) === undefined, 10_000);
    } finally {
      session.close();
    }
  });

  it("reads an id's bits as the database does, the high bit included", async () => {
    const ids = [
      '00000000-0000-4000-8000-000000000000',
      'ffffffff-ffff-4fff-bfff-ffffffffffff',
      '80000000-1234-4abc-9def-7fffffffffff',
      '7fffffff-aaaa-4bbb-8ccc-800000000001',
    ];
    const rows = await t.app.get(DataSource).query<{ head: number; tail: number }[]>(
      `SELECT ('x' || left(id::text, 8))::bit(32)::int AS head, ('x' || right(id::text, 8))::bit(32)::int AS tail
           FROM unnest($1::uuid[]) WITH ORDINALITY AS u (id, n) ORDER BY n`,
      [ids],
    );
    expect(rows.map((r) => [r.head, r.tail])).toEqual(ids.map(idBits));
    expect(idBits(ids[1])).toEqual([-1, -1]);
  });
});

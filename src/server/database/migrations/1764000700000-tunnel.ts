import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The instance's identity (one id for every replica sharing the database, generated once here),
 * leases that make periodic work run on one replica at a time, and the tunnel's stored state:
 * the desired state that survives restarts, the custom public URL, owners' base subdomains and
 * the stack services published under them.
 */
export class Tunnel1764000700000 implements MigrationInterface {
  name = 'Tunnel1764000700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE instance (
        id          smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
        instance_id uuid NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`INSERT INTO instance (instance_id) VALUES (gen_random_uuid())`);
    await q.query(`
      CREATE TABLE leases (
        name       text PRIMARY KEY,
        holder     text NOT NULL,
        expires_at timestamptz NOT NULL
      )`);
    await q.query(`
      CREATE TABLE tunnel_state (
        id             smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
        desired        text NOT NULL DEFAULT 'stopped' CHECK (desired IN ('running', 'stopped')),
        custom_url     text,
        updated_at     timestamptz NOT NULL DEFAULT now(),
        -- What the replica holding the tunnel last reported, so every replica answers status.
        state          text NOT NULL DEFAULT 'stopped',
        provider       text,
        public_url     text,
        agent_endpoint text,
        started_at     timestamptz,
        last_error     text,
        holder         text,
        reported_at    timestamptz
      )`);
    await q.query(`INSERT INTO tunnel_state (id) VALUES (1)`);
    await q.query(`
      CREATE TABLE tunnel_bases (
        base_id    text PRIMARY KEY,
        owner      text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE tunnel_services (
        subdomain    text PRIMARY KEY,
        base_id      text NOT NULL REFERENCES tunnel_bases (base_id) ON DELETE CASCADE,
        owner        text NOT NULL,
        stack_id     uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
        service      text NOT NULL,
        worker_id    uuid,
        target_host  text NOT NULL,
        target_port  integer NOT NULL CHECK (target_port BETWEEN 1 AND 65535),
        created_at   timestamptz NOT NULL DEFAULT now(),
        updated_at   timestamptz NOT NULL DEFAULT now(),
        UNIQUE (stack_id, service)
      )`);
    await q.query(`CREATE INDEX tunnel_services_base ON tunnel_services (base_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE tunnel_services`);
    await q.query(`DROP TABLE tunnel_bases`);
    await q.query(`DROP TABLE tunnel_state`);
    await q.query(`DROP TABLE leases`);
    await q.query(`DROP TABLE instance`);
  }
}

import * as grpc from '@grpc/grpc-js';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import { ResumingCredentials, TlsSessionStore } from '../../src/agent/tls-session.js';
import { loadAgentProto, type ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { helloMessage, preApprovedToken } from '../support/grpc-agent.js';

// TLS session resumption on the agent port (issue 18): the agent's credentials (the real agent's
// class) offer the last session; the service's tickets survive a restart; the certificate kept in
// the resumed session is the identity the service checks, so a revoked certificate is refused on a
// resumed session too, through the replica that revoked it and through one that did not.

const proto = loadAgentProto();
type Gateway = grpc.Client & {
  Connect(): grpc.ClientDuplexStream<object, ServerMessage>;
  RenewCertificate(
    request: { csr_pem: string },
    callback: (err: grpc.ServiceError | null, res?: { certificate_pem: string }) => void,
  ): void;
};

interface Identity {
  id: string;
  keyPem: string;
  certPem: string;
  caPem: string;
}

describe('TLS session resumption on the agent port', () => {
  let db: TestDatabase;
  let t: TestApp;
  let identity: Identity;
  const tls = new TlsSessionStore();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startTestApp({ db, env: { HEARTBEAT_INTERVAL: '1s' } });
    const token = await preApprovedToken(t);
    const { keyPem, csrPem } = await newKeyAndCsr('node-resume');
    const res = await t.http.post('/api/v1/orchestrator/workers/enroll').send({
      token,
      csr: csrPem,
      hostname: 'node-resume.test',
      address: '127.0.0.1',
      os: 'linux',
      arch: 'x64',
      version: 'test',
      driver: 'process',
      name: 'node-resume',
    });
    expect(res.status).toBe(201);
    identity = {
      id: res.body.worker_id as string,
      keyPem,
      certPem: res.body.certificate as string,
      caPem: res.body.ca_certificate as string,
    };
  });
  afterAll(async () => {
    await t.close();
  });

  async function client(): Promise<Gateway> {
    const endpoint = (await t.http.get('/api/v1/orchestrator/info').set('Authorization', await t.adminAuth()))
      .body.agent_endpoint as string;
    const credentials = new ResumingCredentials(
      Buffer.from(identity.caPem),
      Buffer.from(identity.keyPem),
      identity.certPem,
      tls,
    );
    return new proto.AgentGateway(endpoint, credentials) as unknown as Gateway;
  }

  /** One Connect: the welcome's worker id, or the error; and whether the handshake resumed. */
  async function connect(): Promise<{ welcomed?: string; error?: grpc.ServiceError; resumed: boolean }> {
    const c = await client();
    const stream = c.Connect();
    const outcome = await new Promise<{ welcomed?: string; error?: grpc.ServiceError }>((resolve) => {
      stream.on('data', (m: ServerMessage) => {
        if (m.welcome) resolve({ welcomed: m.welcome.worker_id });
      });
      stream.on('error', (error: grpc.ServiceError) => resolve({ error }));
      stream.write(helloMessage(identity.id));
    });
    stream.cancel();
    c.close();
    return { ...outcome, resumed: tls.lastResumed };
  }

  async function renew(): Promise<grpc.ServiceError | null> {
    const c = await client();
    const { csrPem } = await newKeyAndCsr(identity.id);
    return new Promise((resolve) =>
      c.RenewCertificate({ csr_pem: csrPem }, (err) => {
        c.close();
        resolve(err);
      }),
    );
  }

  async function restart(): Promise<void> {
    await t.close({ drop: false });
    t = await startTestApp({ db, env: { HEARTBEAT_INTERVAL: '1s' } });
  }

  it('resumes the session after a restart of the service, as the same worker', async () => {
    const first = await connect();
    expect(first).toMatchObject({ welcomed: identity.id, resumed: false });
    expect(tls.get(identity.certPem)).toBeInstanceOf(Buffer);
    // Within one process, and across a restart (the ticket key is derived, not random).
    expect(await connect()).toMatchObject({ welcomed: identity.id, resumed: true });
    await restart();
    expect(await connect()).toMatchObject({ welcomed: identity.id, resumed: true });
    // A session is offered only with the certificate it was made with.
    expect(tls.get('another certificate')).toBeUndefined();
  });

  it('refuses a certificate revoked by another replica on a resumed session: streams and renewals', async () => {
    // This replica knows the certificate valid (read at its start and at the last connect).
    expect(await connect()).toMatchObject({ welcomed: identity.id, resumed: true });
    // What another replica's deletion of the worker writes: the certificate revoked, the row gone.
    const sql = t.app.get(DataSource);
    await sql.query('UPDATE worker_certificates SET revoked_at = now() WHERE worker_id = $1', [identity.id]);
    const renewal = await renew();
    expect(tls.lastResumed).toBe(true);
    expect(renewal?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(renewal?.details).toContain('identity_revoked');
    await sql.query('DELETE FROM workers WHERE id = $1', [identity.id]);
    const refused = await connect();
    expect(refused.resumed).toBe(true);
    expect(refused.welcomed).toBeUndefined();
    expect(refused.error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(refused.error?.details).toContain('identity_revoked');
  });
});

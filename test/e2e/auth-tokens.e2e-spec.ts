import { createHmac, createPublicKey } from 'node:crypto';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp, type TokenPair } from '../support/app.js';
import { foreignKey, serviceSigningKey, sign, unsignedToken } from '../support/tokens.js';

const ISSUER = 'https://orchestrator.test';
/** The order of the P-256 group. */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;
const AUDIENCE = 'stack-orchestrator';

describe('OAuth token endpoint and access tokens', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { PUBLIC_URL: ISSUER } });
  });
  afterAll(() => t.close());

  const verifyWithJwks = (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`)), {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['ES256'],
      typ: 'at+jwt',
    });

  function expectTokenResponse(res: {
    status: number;
    headers: Record<string, string>;
    body: TokenPair;
  }): void {
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.body.token_type).toBe('Bearer');
    expect(res.body.expires_in).toBe(900);
    expect(res.body.refresh_token).toMatch(/^rt_[A-Za-z0-9_-]{43}$/);
    expect(res.body.scope).toBe('admin');
  }

  it('issues a token for a JSON body, verifiable with a standard JOSE library against the JWK set', async () => {
    const res = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'client_credentials', client_id: ADMIN.clientId, client_secret: ADMIN.secret });
    expectTokenResponse(res);
    const { payload, protectedHeader } = await verifyWithJwks(res.body.access_token as string);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(typeof protectedHeader.kid).toBe('string');
    expect(payload).toMatchObject({
      iss: ISSUER,
      sub: ADMIN.clientId,
      aud: AUDIENCE,
      client_id: ADMIN.clientId,
      scope: 'admin',
      owner: 'default',
    });
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('issues a token for a form body with client authentication in the body', async () => {
    const res = await t.http
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: ADMIN.clientId, client_secret: ADMIN.secret });
    expectTokenResponse(res);
    await verifyWithJwks(res.body.access_token as string);
  });

  it('issues a token with HTTP Basic client authentication (form-encoded credentials)', async () => {
    const basic = Buffer.from(
      `${encodeURIComponent(ADMIN.clientId)}:${encodeURIComponent(ADMIN.secret)}`,
    ).toString('base64');
    const res = await t.http
      .post('/oauth/token')
      .set('Authorization', `Basic ${basic}`)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectTokenResponse(res);
  });

  it('publishes the key set with the signing key id and no private part', async () => {
    const res = await t.http.get('/.well-known/jwks.json').expect(200);
    expect(res.body.keys).toHaveLength(1);
    const [key] = res.body.keys as Record<string, string>[];
    expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(key.d).toBeUndefined();
    const { protectedHeader } = await verifyWithJwks((await t.token()).access_token);
    expect(protectedHeader.kid).toBe(key.kid);
  });

  it('narrows scope on request and refuses a scope the client does not hold', async () => {
    const narrowed = await t.token(ADMIN, 'orchestrator:read metrics:read');
    expect(narrowed.scope).toBe('orchestrator:read metrics:read');
    const { payload } = await verifyWithJwks(narrowed.access_token);
    expect(payload.scope).toBe('orchestrator:read metrics:read');
    // A read-only token cannot change settings.
    await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', `Bearer ${narrowed.access_token}`)
      .send({ log_level: 'info' })
      .expect(403);

    const res = await t.http.post('/oauth/token').send({
      grant_type: 'client_credentials',
      client_id: ADMIN.clientId,
      client_secret: ADMIN.secret,
      scope: 'root',
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
  });

  it.each([
    [{}, 400, 'invalid_request'],
    [{ grant_type: 'password', username: 'a', password: 'b' }, 400, 'unsupported_grant_type'],
    [{ grant_type: 'client_credentials' }, 401, 'invalid_client'],
    [{ grant_type: 'client_credentials', client_id: ADMIN.clientId }, 401, 'invalid_client'],
    [
      { grant_type: 'client_credentials', client_id: ADMIN.clientId, client_secret: 'wrong-secret' },
      401,
      'invalid_client',
    ],
    [{ grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'x' }, 401, 'invalid_client'],
    [{ grant_type: 'client_credentials', client_id: ['a'], client_secret: 'x' }, 400, 'invalid_request'],
    [{ grant_type: 'refresh_token' }, 400, 'invalid_request'],
    [{ grant_type: 'refresh_token', refresh_token: 'rt_not-a-real-token' }, 400, 'invalid_grant'],
  ])('answers %j with %d %s as an RFC 6749 body', async (body, status, error) => {
    const res = await t.http.post('/oauth/token').send(body);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
    expect(res.body.error).toBe(error);
    expect(res.headers['cache-control']).toBe('no-store');
    if (status === 401) expect(res.headers['www-authenticate']).toMatch(/realm="stack-orchestrator"/);
  });

  it('answers malformed JSON and other media types at the token endpoint in RFC 6749 form', async () => {
    const bad = await t.http
      .post('/oauth/token')
      .set('Content-Type', 'application/json')
      .send('{"grant_type":');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
    const text = await t.http
      .post('/oauth/token')
      .set('Content-Type', 'text/plain')
      .send('grant_type=client_credentials');
    expect(text.status).toBe(415);
    expect(text.body.error).toBe('invalid_request');
  });

  it('refuses two client authentication methods at once', async () => {
    const basic = Buffer.from(`${ADMIN.clientId}:${ADMIN.secret}`).toString('base64');
    const res = await t.http
      .post('/oauth/token')
      .set('Authorization', `Basic ${basic}`)
      .send({ grant_type: 'client_credentials', client_id: ADMIN.clientId, client_secret: ADMIN.secret });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  describe('refresh tokens', () => {
    const refresh = (token: string, extra: Record<string, string> = {}) =>
      t.http.post('/oauth/token').send({ grant_type: 'refresh_token', refresh_token: token, ...extra });

    it('each refresh returns a new pair and the old refresh token stops working', async () => {
      const first = await t.token();
      const second = await refresh(first.refresh_token);
      expectTokenResponse(second);
      expect(second.body.refresh_token).not.toBe(first.refresh_token);
      expect(second.body.access_token).not.toBe(first.access_token);
      await verifyWithJwks(second.body.access_token as string);
      const third = await refresh(second.body.refresh_token as string);
      expect(third.status).toBe(200);
    });

    it('presenting a used refresh token revokes its whole family', async () => {
      const first = await t.token();
      const second = await refresh(first.refresh_token);
      expect(second.status).toBe(200);
      // An attacker replays the first token: refused, and the family is revoked...
      const replay = await refresh(first.refresh_token);
      expect(replay.status).toBe(400);
      expect(replay.body.error).toBe('invalid_grant');
      // ...so the legitimate holder's newer token is dead too.
      const victim = await refresh(second.body.refresh_token as string);
      expect(victim.status).toBe(400);
      expect(victim.body.error).toBe('invalid_grant');
      // Another family is untouched.
      expect((await refresh((await t.token()).refresh_token)).status).toBe(200);
    });

    it("revocation (sign-out) ends one sign-in and leaves the client's other sign-ins working", async () => {
      const signIn = await t.token();
      const other = await t.token();
      const next = await refresh(signIn.refresh_token);
      expect(next.status).toBe(200);
      const revoke = (body: Record<string, string>) => t.http.post('/oauth/revoke').send(body);
      const revoked = await revoke({
        token: next.body.refresh_token as string,
        token_type_hint: 'refresh_token',
      });
      expect(revoked.status).toBe(200);
      expect(revoked.text).toBe('');
      expect((await refresh(next.body.refresh_token as string)).body.error).toBe('invalid_grant');
      expect((await refresh(other.refresh_token)).status).toBe(200);
      // Unknown and already revoked tokens answer the same; form bodies work too.
      expect((await revoke({ token: next.body.refresh_token as string })).status).toBe(200);
      const form = await t.http.post('/oauth/revoke').type('form').send({ token: 'rt_nonexistent' });
      expect(form.status).toBe(200);
      // RFC 6749 error bodies: no token, or an access token.
      const missing = await revoke({});
      expect(missing.status).toBe(400);
      expect(missing.body.error).toBe('invalid_request');
      const access = await revoke({ token: other.access_token });
      expect(access.status).toBe(400);
      expect(access.body.error).toBe('unsupported_token_type');
      const events = await t.http
        .get('/api/v1/orchestrator/audit?action=refresh.revoked')
        .set('Authorization', await t.adminAuth())
        .expect(200);
      expect(events.body.events).toHaveLength(1);
    });

    it('two concurrent refreshes with one token: a reuse, so the whole family ends up revoked', async () => {
      const pair = await t.token();
      const results = await Promise.all([refresh(pair.refresh_token), refresh(pair.refresh_token)]);
      const ok = results.filter((r) => r.status === 200);
      expect(ok.length).toBeLessThanOrEqual(1);
      expect(results.filter((r) => r.status === 400).length).toBeGreaterThanOrEqual(1);
      // Whichever request won the race, its new refresh token does not outlive the detected reuse.
      for (const r of ok) {
        const next = await refresh(r.body.refresh_token as string);
        expect(next.status).toBe(400);
        expect(next.body.error).toBe('invalid_grant');
      }
    });

    it('refresh may narrow the scope but never widen it', async () => {
      const narrow = await t.token(ADMIN, 'orchestrator:read orchestrator:write');
      const narrower = await refresh(narrow.refresh_token, { scope: 'orchestrator:read' });
      expect(narrower.status).toBe(200);
      expect(narrower.body.scope).toBe('orchestrator:read');
      const wider = await refresh(narrower.body.refresh_token as string, {
        scope: 'orchestrator:read admin',
      });
      expect(wider.status).toBe(400);
      expect(wider.body.error).toBe('invalid_scope');
    });

    it('a refresh refused for its scope does not use the token up', async () => {
      const pair = await t.token(ADMIN, 'orchestrator:read');
      const refused = await refresh(pair.refresh_token, { scope: 'admin' });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_scope');
      const retried = await refresh(pair.refresh_token, { scope: 'orchestrator:read' });
      expect(retried.status).toBe(200);
      expect(retried.body.scope).toBe('orchestrator:read');
    });

    it('a refresh whose new token cannot be stored leaves the old one usable', async () => {
      const pair = await t.token();
      const db = t.app.get(DataSource);
      // The database refuses the successor's INSERT, after the redeem in the same request.
      await db.query(`CREATE FUNCTION refuse_insert() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
      await db.query(`CREATE TRIGGER refuse_insert BEFORE INSERT ON refresh_tokens
        FOR EACH ROW EXECUTE FUNCTION refuse_insert()`);
      try {
        const failed = await refresh(pair.refresh_token);
        expect(failed.status).toBeGreaterThanOrEqual(500);
      } finally {
        await db.query('DROP TRIGGER refuse_insert ON refresh_tokens');
        await db.query('DROP FUNCTION refuse_insert()');
      }
      const retried = await refresh(pair.refresh_token);
      expect(retried.status).toBe(200);
      expect((await refresh(retried.body.refresh_token as string)).status).toBe(200);
    });

    it('a refresh authenticated as another client is refused', async () => {
      const created = await t.http
        .post('/api/v1/auth/clients')
        .set('Authorization', await t.adminAuth())
        .send({ name: 'other', scopes: ['orchestrator:read'] })
        .expect(201);
      const pair = await t.token();
      const res = await refresh(pair.refresh_token, {
        client_id: created.body.client_id as string,
        client_secret: created.body.client_secret as string,
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
    });

    it('refresh tokens are stored only as hashes', async () => {
      const pair = await t.token();
      const { DataSource } = await import('typeorm');
      const rows = await t.app
        .get(DataSource)
        .query<{ token_hash: string }[]>('SELECT token_hash FROM refresh_tokens');
      expect(rows.length).toBeGreaterThan(0);
      expect(JSON.stringify(rows)).not.toContain(pair.refresh_token);
      expect(JSON.stringify(rows)).not.toContain(pair.refresh_token.slice(3));
    });
  });

  describe('tokens the service must refuse', () => {
    let claims: JWTPayload;
    let kid: string;
    beforeAll(async () => {
      kid = (await serviceSigningKey(t.app)).kid;
      const now = Math.floor(Date.now() / 1000);
      claims = {
        iss: ISSUER,
        sub: ADMIN.clientId,
        aud: AUDIENCE,
        iat: now,
        exp: now + 600,
        jti: 'b0f9d3a4-0000-4000-8000-000000000000',
        client_id: ADMIN.clientId,
        scope: 'admin',
        owner: 'default',
      };
    });

    const call = (token: string) =>
      t.http.get('/api/v1/auth/validate').set('Authorization', `Bearer ${token}`);

    async function expectRefused(token: string): Promise<void> {
      const res = await call(token);
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
      expect(res.headers['www-authenticate']).toMatch(
        /^Bearer realm="stack-orchestrator", error="invalid_token"/,
      );
    }

    it('accepts a well-formed token signed with the service key (the control case)', async () => {
      const { key } = await serviceSigningKey(t.app);
      const token = await sign(key, { alg: 'ES256', kid, typ: 'at+jwt' }, claims);
      // The same token with anything after it, or two spaces before it, is not one b64token (RFC 6750).
      for (const header of [`Bearer ${token} junk`, `Bearer  ${token}`, `Bearer ${token},x`]) {
        const refused = await t.http.get('/api/v1/auth/validate').set('Authorization', header);
        expect(refused.status, header.slice(-12)).toBe(401);
        expect(refused.headers['www-authenticate']).toMatch(/error="invalid_token"/);
      }
      const res = await call(token).expect(200);
      expect(res.body).toMatchObject({
        active: true,
        client_id: ADMIN.clientId,
        owner: 'default',
        scope: 'admin',
        iss: ISSUER,
        aud: AUDIENCE,
      });
    });

    it('alg: none', async () => {
      await expectRefused(unsignedToken(claims, kid));
    });

    it('algorithm confusion: HS256 keyed with the published public key', async () => {
      const jwk = ((await t.http.get('/.well-known/jwks.json')).body.keys as object[])[0];
      const pem = createPublicKey({ key: jwk as never, format: 'jwk' })
        .export({ type: 'spki', format: 'pem' })
        .toString();
      const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid })).toString('base64url');
      const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
      const mac = createHmac('sha256', pem).update(`${header}.${body}`).digest('base64url');
      await expectRefused(`${header}.${body}.${mac}`);
    });

    it('expired', async () => {
      const { key } = await serviceSigningKey(t.app);
      const past = Math.floor(Date.now() / 1000) - 3600;
      await expectRefused(
        await sign(key, { alg: 'ES256', kid, typ: 'at+jwt' }, { ...claims, iat: past - 900, exp: past }),
      );
    });

    it('not yet valid', async () => {
      const { key } = await serviceSigningKey(t.app);
      await expectRefused(
        await sign(
          key,
          { alg: 'ES256', kid, typ: 'at+jwt' },
          { ...claims, nbf: Math.floor(Date.now() / 1000) + 3600 },
        ),
      );
    });

    it('tampered payload (scope widened after signing)', async () => {
      const narrow = (await t.token(ADMIN, 'orchestrator:read')).access_token;
      const [h, p, s] = narrow.split('.');
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString()) as JWTPayload;
      await expectRefused(
        `${h}.${Buffer.from(JSON.stringify({ ...payload, scope: 'admin' })).toString('base64url')}.${s}`,
      );
    });

    it('foreign key claiming our kid', async () => {
      await expectRefused(await sign(foreignKey(), { alg: 'ES256', kid, typ: 'at+jwt' }, claims));
    });

    it('unknown kid', async () => {
      await expectRefused(await sign(foreignKey(), { alg: 'ES256', kid: 'not-ours', typ: 'at+jwt' }, claims));
    });

    it('wrong issuer or audience, even with our key', async () => {
      const { key } = await serviceSigningKey(t.app);
      await expectRefused(
        await sign(key, { alg: 'ES256', kid, typ: 'at+jwt' }, { ...claims, iss: 'https://evil.test' }),
      );
      await expectRefused(
        await sign(key, { alg: 'ES256', kid, typ: 'at+jwt' }, { ...claims, aud: 'another-api' }),
      );
    });

    it('not an access token (typ JWT) or missing claims, even with our key', async () => {
      const { key } = await serviceSigningKey(t.app);
      await expectRefused(await sign(key, { alg: 'ES256', kid, typ: 'JWT' }, claims));
      const { owner: _owner, ...noOwner } = claims;
      await expectRefused(await sign(key, { alg: 'ES256', kid, typ: 'at+jwt' }, noOwner));
    });

    it('a malformed signature: 401, and nothing above a debug record', async () => {
      const good = (await t.token()).access_token;
      const [h, p, sig] = good.split('.');
      const before = t.logs.lines.length;
      // Too short, too long, not base64url, and empty: each once broke the verifier's DER conversion.
      for (const bad of [sig.slice(0, 40), `${sig}AAAA`, '!!!!', 'A'.repeat(86) + '~~']) {
        await expectRefused(`${h}.${p}.${bad}`);
      }
      const loud = t.logs
        .records()
        .slice(before)
        .filter((r) => !['TRACE', 'DEBUG'].includes(r.level));
      expect(loud).toEqual([]);
    });

    it('a high-S (non-canonical) ECDSA signature is refused, its low-S twin accepted', async () => {
      const good = (await t.token()).access_token;
      const [h, p, sig] = good.split('.');
      const raw = Buffer.from(sig, 'base64url');
      const s = BigInt(`0x${raw.subarray(32).toString('hex')}`);
      // Every token the service issues is low-S, so n - s is the malleated, equally valid signature.
      expect(s <= P256_N / 2n).toBe(true);
      const high = Buffer.concat([
        raw.subarray(0, 32),
        Buffer.from((P256_N - s).toString(16).padStart(64, '0'), 'hex'),
      ]);
      await call(good).expect(200);
      await expectRefused(`${h}.${p}.${high.toString('base64url')}`);
    });

    it('signs every token low-S', async () => {
      for (let i = 0; i < 24; i++) {
        const sig = Buffer.from((await t.token()).access_token.split('.')[2], 'base64url');
        expect(sig.length).toBe(64);
        expect(BigInt(`0x${sig.subarray(32).toString('hex')}`) <= P256_N / 2n).toBe(true);
      }
    });

    it('garbage', async () => {
      await expectRefused('not.a.jwt');
      await expectRefused('eyJ');
    });

    it('no token at all: 401 with a bare Bearer challenge', async () => {
      const res = await t.http.get('/api/v1/auth/validate').expect(401);
      expect(res.headers['www-authenticate']).toBe(
        `Bearer realm="stack-orchestrator", resource_metadata="${ISSUER}/.well-known/oauth-protected-resource"`,
      );
      const basic = await t.http.get('/api/v1/auth/validate').set('Authorization', 'Basic YTpi').expect(401);
      expect(basic.body.code).toBe('unauthorized');
    });
  });
});

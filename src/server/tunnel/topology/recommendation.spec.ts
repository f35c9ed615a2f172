import { describe, expect, it } from 'vitest';
import { recommend, type RecommendationInput } from './recommendation.js';
import type { StunAttempt } from './stun-client.js';

const answered: StunAttempt = { server: '192.0.2.10:3478', outcome: 'answered', requests: 1 };
const silent = (server: string): StunAttempt => ({ server, outcome: 'no-answer', requests: 3 });
const base: RecommendationInput = {
  environment: 'bare-metal',
  publicIp: '198.51.100.4',
  hasNat: false,
  attempts: [answered],
  deadlineMs: 3000,
};

describe('recommend', () => {
  it('recommends direct when the public address is one of our own', () => {
    const { recommended_mode, reason } = recommend(base);
    expect(recommended_mode).toBe('direct');
    expect(reason).toBe(
      'A STUN server sees this machine as 198.51.100.4, which is one of its own addresses: there is no NAT ' +
        'in between, so agents can connect to it directly if the firewall lets them in.',
    );
  });

  it('recommends the tunnel behind NAT, and says why', () => {
    const { recommended_mode, reason } = recommend({ ...base, publicIp: '203.0.113.7', hasNat: true });
    expect(recommended_mode).toBe('tunnel');
    expect(reason).toBe(
      'A STUN server sees this machine as 203.0.113.7, which is not one of its own addresses: it is behind ' +
        'NAT, so agents outside its network cannot connect to it unless ports are forwarded to it. Use the tunnel.',
    );
  });

  it('recommends the tunnel when no STUN server answered, naming the deadline and the servers', () => {
    const { recommended_mode, reason } = recommend({
      ...base,
      publicIp: null,
      attempts: [silent('127.0.0.1:3478'), silent('[::1]:3478')],
    });
    expect(recommended_mode).toBe('tunnel');
    expect(reason).toBe(
      'No STUN server answered within 3 s (asked 127.0.0.1:3478, [::1]:3478), so the public address is ' +
        'unknown. Use the tunnel: it works whether or not this machine can be reached from outside.',
    );
    expect(
      recommend({ ...base, publicIp: null, attempts: [silent('a:1')], deadlineMs: 800 }).reason,
    ).toContain('within 0.8 s');
  });

  it('says what each server did when they failed in different ways', () => {
    const { reason } = recommend({
      ...base,
      publicIp: null,
      attempts: [
        { server: '127.0.0.1:1', outcome: 'refused', requests: 1 },
        { server: 'stun.test:3478', outcome: 'unresolved', requests: 0 },
        { server: '127.0.0.1:2', outcome: 'error-response', requests: 1, detail: 'STUN error 400' },
        silent('127.0.0.1:3'),
      ],
    });
    expect(reason).toBe(
      'No STUN server gave the public address within 3 s (127.0.0.1:1 refused the request (nothing listens on ' +
        'that port); stun.test:3478 could not be resolved; 127.0.0.1:2 answered with an error (STUN error 400); ' +
        '127.0.0.1:3 did not answer within 3 s). Use the tunnel: it works whether or not this machine can be ' +
        'reached from outside.',
    );
  });

  it('recommends the tunnel when no STUN server is configured', () => {
    const { recommended_mode, reason } = recommend({ ...base, publicIp: null, attempts: [] });
    expect(recommended_mode).toBe('tunnel');
    expect(reason).toMatch(/^No STUN server is configured \(TUNNEL_STUN_SERVERS\)/);
  });

  it('adds what a container or a Kubernetes pod changes', () => {
    const nat = { ...base, publicIp: '203.0.113.7', hasNat: true };
    expect(recommend({ ...nat, environment: 'container' }).reason).toMatch(
      /Use the tunnel\. In a container the translation may be only the container network's: .*publishing the ports on the host works too\.$/,
    );
    expect(recommend({ ...nat, environment: 'kubernetes' }).reason).toMatch(
      /Use the tunnel\. In Kubernetes, a Service of type LoadBalancer or NodePort is the alternative to the tunnel\.$/,
    );
    expect(recommend({ ...nat, environment: 'vm' }).reason).toMatch(/Use the tunnel\.$/);
    expect(recommend({ ...base, environment: 'container' })).toMatchObject({
      recommended_mode: 'direct',
      reason: expect.stringMatching(/This runs in a container that uses the host's network\.$/),
    });
    expect(recommend({ ...base, environment: 'kubernetes' }).reason).toMatch(
      /This runs in a Kubernetes pod that uses the host's network\.$/,
    );
  });
});

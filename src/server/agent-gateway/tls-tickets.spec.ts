import { describe, expect, it } from 'vitest';
import { SecretBox } from '../common/secret-box.js';
import { AppConfig } from '../config/config.js';
import { TICKET_PERIOD_MS, ticketOptions, ticketPeriod } from './tls-tickets.js';

const box = (key: string) => new SecretBox(new AppConfig({ ENCRYPTION_KEY: key, DATA_DIR: '/nonexistent' }));

describe('agent port session tickets', () => {
  const key = 'a-master-key-of-at-least-32-characters';
  const at = Date.UTC(2026, 10, 24, 8);

  it('derives one 48-byte key per period and master key, the same in every process', () => {
    const a = ticketOptions(box(key), at);
    expect(a.ticketKeys).toHaveLength(48);
    expect(ticketOptions(box(key), at).ticketKeys.equals(a.ticketKeys)).toBe(true);
    const { endsAt } = ticketPeriod(at);
    expect(ticketOptions(box(key), endsAt - 1).ticketKeys.equals(a.ticketKeys)).toBe(true);
    expect(ticketOptions(box(key), endsAt).ticketKeys.equals(a.ticketKeys)).toBe(false);
    expect(ticketOptions(box(`${key}-other`), at).ticketKeys.equals(a.ticketKeys)).toBe(false);
  });

  it('gives tickets the period as lifetime and a fixed session-id context', () => {
    const o = ticketOptions(box(key), at);
    expect(o.sessionTimeout).toBe(TICKET_PERIOD_MS / 1000);
    expect(o.sessionIdContext).toBe(ticketOptions(box('x'.repeat(40)), at).sessionIdContext);
    expect(ticketPeriod(at).endsAt - at).toBeLessThanOrEqual(TICKET_PERIOD_MS);
  });
});

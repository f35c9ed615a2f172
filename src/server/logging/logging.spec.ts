import pino from 'pino';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { consoleStream, loggerOptions } from './logging.js';

class Lines extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString('utf8');
    callback();
  }
}

function logTo(format: 'json' | 'pretty', colorize: boolean): { log: pino.Logger; out: Lines } {
  const out = new Lines();
  const log = pino(loggerOptions('trace'), consoleStream(out, { format, colorize }));
  return { log, out };
}

describe('consoleStream', () => {
  it('json: the records as they are', () => {
    const { log, out } = logTo('json', false);
    log.info({ component: 'main', port: 1 }, 'service started');
    expect(JSON.parse(out.text)).toMatchObject({
      level: 'INFO',
      component: 'main',
      port: 1,
      msg: 'service started',
    });
  });

  it('pretty: one line per record, errors and nested fields included, no colours unless asked', () => {
    const { log, out } = logTo('pretty', false);
    log.error({ component: 'jobs', err: new Error('boom\nsecond line'), job: { id: 'j1' } }, 'job failed');
    log.info('no component');
    const lines = out.text.split('\n').filter(Boolean);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] ERROR: \[jobs\] job failed \{.*"job":\{"id":"j1"\}/,
    );
    expect(lines[0]).toContain('boom\\nsecond line');
    expect(lines[0]).toContain('"stack":"Error: boom');
    expect(lines[1]).toMatch(/^\[[\d:.]+\] INFO: no component$/);
    expect(out.text).not.toContain('\u001b[');
  });

  it('pretty with colours on a terminal', () => {
    const { log, out } = logTo('pretty', true);
    log.warn({ component: 'auth' }, 'careful');
    expect(out.text).toContain('\u001b[33mWARN\u001b[39m');
    expect(out.text.trimEnd().split('\n')).toHaveLength(1);
  });
});

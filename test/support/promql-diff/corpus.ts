/**
 * The differential corpus (test/fixtures/promql-corpus.txt): one query per line after a mode,
 * `i` instant, `r` range, `e` Prometheus must refuse it, `o` compare the order of an instant
 * answer's values; `/<duration>` after the mode sets the range step. `#` starts a comment line;
 * an indented line continues the previous query on a new line.
 */
import { readFileSync } from 'node:fs';
import { parseDuration } from '../../../src/server/metric-store/promql/lexical.js';

export interface CorpusEntry {
  line: number;
  query: string;
  instant: boolean;
  range: boolean;
  expectError: boolean;
  ordered: boolean;
  step: number;
}

export function loadCorpus(path: string): CorpusEntry[] {
  const out: CorpusEntry[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      const trimmed = text.trim();
      if (/^\s/.test(text) && trimmed !== '' && out.length > 0) {
        out[out.length - 1].query += `\n${trimmed}`;
        return;
      }
      if (trimmed === '' || trimmed.startsWith('#')) return;
      const m = /^([ireo]+)(?:\/(\S+))?\s+(.+)$/.exec(trimmed);
      if (!m) throw new Error(`corpus line ${i + 1}: expected "<mode> <query>": ${text}`);
      const [, mode, stepText, query] = m;
      const step = stepText ? parseDuration(stepText) : 60_000;
      if (typeof step !== 'number' || step <= 0)
        throw new Error(`corpus line ${i + 1}: bad step ${stepText}`);
      const expectError = mode.includes('e');
      out.push({
        line: i + 1,
        query,
        instant: mode.includes('i') || expectError,
        range: mode.includes('r'),
        expectError,
        ordered: mode.includes('o'),
        step,
      });
    });
  return out;
}
